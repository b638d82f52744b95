#pragma once
/// Text and JSON renderings of a tune (`moetune tune`): the command first, then
/// every decision with its rule and evidence, the comparison with llama.cpp's
/// defaults, the curve reading, the raw measurements. Fields in docs/cli.md.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/placement.h"
#include "report/emit.h"
#include "tune/tuner.h"
#include "util/result.h"

namespace moetune {

struct TuneReport {
  std::string model_path;
  std::string model_name;
  int64_t ctx = 0;
  Workload workload;
  std::string engine;  // "llama.cpp 0.7.0 (build 11669) at ..." or "simulated: ..."
  bool simulated = false;
  std::string machine;                    // one line
  std::vector<std::string> checks;        // warnings from the machine and engine checks
  std::optional<PlacementOption> memory;  // the plan's memory map of the pick
  int64_t vram_budget = 0;                // free VRAM minus reserve, when known
  int64_t reserve = 0;                    // GPU memory other programs hold (--reserve)
  std::vector<std::string> server_argv;   // the llama-server command
  std::vector<std::string> reproduce;     // commands that reproduce this tune
  std::string journal;
  TuneResult result;
};

nlohmann::json TuneJson(const TuneReport& report);
std::string TuneText(const TuneReport& report);

/// `--emit FORMAT`: the tuned llama-server command as ready-to-paste
/// configuration (report/emit.h), with the model path made absolute (from
/// the current folder when it is relative) and a header naming moetune, the
/// llama.cpp version it was tuned with, the context and the workload.
Result<std::string> TuneEmit(const TuneReport& report, EmitFormat format);

/// The llama.cpp version in `report.engine` ("llama.cpp 0.7.0 (build 11669,
/// commit Debian)"), or the engine line as it is when it names none.
std::string TuneEngineVersion(const TuneReport& report);

}  // namespace moetune
