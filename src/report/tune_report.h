#pragma once
/// Text and JSON renderings of a tune (`moetune tune`): the command first, then
/// every decision with its rule and evidence, the comparison with llama.cpp's
/// defaults, the curve reading, the raw measurements. Fields in docs/cli.md.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/placement.h"
#include "tune/tuner.h"

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
  std::vector<std::string> server_argv;   // the llama-server command
  std::vector<std::string> reproduce;     // commands that reproduce this tune
  std::string journal;
  TuneResult result;
};

nlohmann::json TuneJson(const TuneReport& report);
std::string TuneText(const TuneReport& report);

}  // namespace moetune
