#pragma once
/// The tune job (`moetune tune`, and the demo's last step) as one library
/// function: a typed request (the model, the workload, what is known of the
/// machine, the budget, the journal) and an engine in, a TuneReport out.
/// Callers choose the engine (the real llama.cpp after the doctor's checks, or
/// the simulated one on a what-if machine) and render the report (report/).
///
/// TuneReport is what a tune produced, as one value: the result of the search
/// (the pick as a ServerConfig, its own memory map, the decisions, the
/// measurements, the comparison with llama.cpp's defaults) with what it was
/// run on (model, context, workload, engine, machine, budget). The text, the
/// JSON, the `--report` documents and `--emit` all render this value, and the
/// JSON reader (`moetune report TUNE.json`) gives it back.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/server_argv.h"
#include "engine/engine.h"
#include "hw/cpu_topology.h"
#include "model/model_info.h"
#include "plan/placement.h"
#include "speed/calibration.h"
#include "speed/machine_spec.h"
#include "tune/journal.h"
#include "tune/objective.h"
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
  std::string machine;                 // one line
  std::vector<std::string> checks;     // warnings from the machine and engine checks
  int64_t vram_budget = 0;             // free VRAM minus reserve, when known
  int64_t reserve = 0;                 // GPU memory kept free beyond what others hold (--reserve)
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

/// What the job knows of the machine the engine runs on, before measuring:
/// chosen with the engine (the real machine after the doctor's checks, or the
/// what-if machine of the simulated engine).
struct TuneMachine {
  bool has_gpu = false;
  CpuTopology cpu;
  int64_t vram_free = 0;  // the plan's budget before the reserve (0 = unknown: no plan)
  int64_t reserve = 0;    // GPU memory kept free beyond what others hold (--reserve)
  DeviceKind device_kind = DeviceKind::kCuda;
  /// Several devices (two or more): each one's name, free memory, reserve and
  /// kind, in the order llama.cpp's model uses them without -dev
  /// (DefaultDeviceOrder: RPC devices first); tune then searches placements
  /// across them, and their order (vram_free is their sum).
  std::vector<DeviceBudget> devices;
  /// The RPC servers whose devices those are (--rpc HOST:PORT, in order):
  /// every configuration measured or written joins them.
  std::vector<std::string> rpc;
  /// The engine and machine parts of the journal's identity (the job adds the model's).
  JournalIdentity identity;
  /// The report's header: the engine and machine lines, simulated or not, the
  /// warnings of the checks.
  std::string engine_line;
  std::string machine_line;
  bool simulated = false;
  std::vector<std::string> checks;
  /// What the caller says before the tune (e.g. "SIMULATED: ..."), kept in the
  /// result's notes.
  std::vector<std::string> notes;
  /// The machine as the speed model sees it, and its constants: the expected
  /// time of the first runs, before any was measured (TuneSpace::predicted_tps);
  /// nullopt when unknown.
  std::optional<MachineSpec> spec;
  CalibrationConstants constants;
};

/// What tune knows of a machine from its spec (a what-if machine, simulated):
/// the simulated CPU topology, the first GPU's budget, or, with several
/// devices, each one's (`devices`), the spec and the constants. The engine,
/// identity and report lines are the caller's.
TuneMachine TuneMachineFromSpec(const MachineSpec& spec, const CalibrationConstants& constants);

struct TuneJobRequest {
  std::string model_path;
  const ModelInfo* model = nullptr;  // read from model_path by the caller
  int64_t ctx = 4096;
  Workload workload{"chat", 1024, 384};
  double budget_seconds = 1200;
  int repetitions = 3;
  /// `--proven-edge` (TuneOptions::take_proven_edge).
  bool proven_edge = false;
  /// Thread counts to try instead of the topology's (empty: the topology's).
  std::vector<int> threads;
  /// The journal to resume and extend; empty: none.
  std::string journal_path;
  /// The commands that reproduce this tune (the report's "reproduce").
  std::vector<std::string> reproduce;
};

/// What the job tells its caller while it runs: the notes known before the
/// first measurement (the space's assumptions, what the journal resumed), then
/// progress.
struct TuneJobHooks {
  std::function<void(const std::vector<std::string>& notes)> before_measuring;
  Tuner::ProgressFn progress;
};

struct TuneJobResult {
  TuneReport report;
  /// Set when some measurements could not be saved to the journal: the report
  /// stands, but a rerun would measure them again.
  std::optional<Error> journal_error;
};

/// Runs the tune: builds the search space from the model and the machine,
/// opens the journal (creating its folder), measures through `engine` and
/// fills the report. Errors: a journal of another model, engine or machine, or
/// one that cannot be opened.
Result<TuneJobResult> RunTuneJob(const TuneJobRequest& request, const TuneMachine& machine,
                                 Engine& engine, const TuneJobHooks& hooks = {});

/// The search space the job measures in: the model's, with the memory plan of
/// the machine's GPU when its free memory is known, and its CPU's thread
/// counts (or the request's). `notes` says what was assumed.
TuneSpace TuneJobSpace(const TuneJobRequest& request, const TuneMachine& machine,
                       std::vector<std::string>* notes);

/// The journal a tune keeps by default:
/// $XDG_CACHE_HOME/moetune/tune/<model>-<ctx>-<workload><suffix>.journal (or
/// ~/.cache/...); empty when neither variable is set. `suffix` tells the
/// journals of different what-if machines apart.
std::string DefaultTuneJournalPath(const std::string& model_path, int64_t ctx,
                                   const std::string& workload, const std::string& suffix);

/// The model part of a journal's identity: the hash covers every
/// hyperparameter and tensor (gguf/gguf.h), so a file of the same name and
/// shape with another expert_used_count is another model.
std::string ModelFingerprint(const ModelInfo& model);

}  // namespace moetune
