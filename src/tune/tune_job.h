#pragma once
/// What a tune produced, as one value: the result of the search (the pick as
/// a ServerConfig, its own memory map, the decisions, the measurements, the
/// comparison with llama.cpp's defaults) with what it was run on (model,
/// context, workload, engine, machine, budget). The text, the JSON, the
/// `--report` documents and `--emit` all render this value (report/), and the
/// JSON reader (`moetune report TUNE.json`) gives it back.

#include <string>
#include <vector>

#include "config/server_argv.h"
#include "tune/objective.h"
#include "tune/tuner.h"

namespace moetune {

struct TuneReport {
  std::string model_path;
  std::string model_name;
  int64_t ctx = 0;
  Workload workload;
  std::string engine;  // "llama.cpp 0.7.0 (build 11669) at ..." or "simulated: ..."
  bool simulated = false;
  std::string machine;                 // one line
  std::vector<std::string> checks;     // warnings from the machine and engine checks
  int64_t vram_budget = 0;             // free VRAM minus reserve, when known
  int64_t reserve = 0;                 // GPU memory other programs hold (--reserve)
  std::vector<std::string> reproduce;  // commands that reproduce this tune
  std::string journal;
  TuneResult result;  // the pick (result.best), its memory map (result.memory), ...

  /// The llama-server command of the pick (config/server_argv.h ServerArgv);
  /// empty when the pick names no model (nothing was tuned).
  std::vector<std::string> Command() const {
    if (result.best.model.empty()) return {};
    return ServerArgv(result.best);
  }
};

}  // namespace moetune
