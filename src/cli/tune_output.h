#pragma once
/// The outputs of a tune, shared by `moetune tune` and `moetune report`
/// (which renders a recorded tune again): the text or JSON, the ready-to-paste
/// configuration (`--emit FORMAT`) and the report file (`--report FILE`).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "report/tune_report.h"

namespace moetune {

struct TuneOutputOptions {
  std::string report;  // --report FILE.html|FILE.md ("" = none)
  std::string emit;    // --emit FORMAT (report/emit.h; "" = the text or JSON)
  bool json = false;
  std::string output;  // -o FILE ("" or "-" = stdout)
};

/// Adds --report and --emit to `cmd` (which must already have --json: --emit
/// excludes it). Bad values are a bad command line (exit 2).
void AddTuneOutputOptions(CLI::App* cmd, std::string* report, std::string* emit);

/// Writes the report file (when asked), then the configuration, JSON or text
/// to the output; never onto one of `inputs`. Returns the exit code. When the
/// configuration cannot be written in the asked format, says why and which
/// formats can.
int WriteTuneOutputs(const TuneReport& report, const TuneOutputOptions& options,
                     const std::vector<std::string>& inputs);

}  // namespace moetune
