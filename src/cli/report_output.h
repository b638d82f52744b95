#pragma once
/// What the `--report FILE` and `--emit FORMAT` options of plan, bench and
/// analyze share: validators (a bad value is a bad command line, exit 2), the
/// command line that produced a report, and writing the report file.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "report/document.h"
#include "util/result.h"

namespace moetune {

/// `--report` must end in .html/.htm or .md/.markdown.
CLI::Validator ReportPathValidator();
/// `--emit` must be one of report/emit.h's formats (EmitFormats).
CLI::Validator EmitFormatValidator();

/// This process's command line (from /proc/self/cmdline; {"moetune"} when it
/// cannot be read), for "How to reproduce".
std::vector<std::string> OwnCommandLine();

/// Renders `report` in the format its path names and writes it atomically
/// (never onto one of `inputs`); says where on stderr.
Status WriteReportFile(const std::string& path, const Report& report,
                       const std::vector<std::string>& inputs = {});

}  // namespace moetune
