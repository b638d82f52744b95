#pragma once
/// What a tune runs on, chosen from the command line: the real llama.cpp on
/// this machine after the doctor's checks, or the simulated engine on a
/// what-if machine. `tune` and `demo` choose here, then call the tune job
/// (tune/tune_job.h).

#include <memory>
#include <string>

#include "cli/bench_sim.h"
#include "engine/engine.h"
#include "tune/tune_job.h"
#include "util/result.h"

namespace moetune {

struct TuneEngine {
  std::unique_ptr<Engine> engine;
  TuneMachine machine;
  /// Tells the default journals of different what-if machines apart.
  std::string journal_suffix;
  /// The flags that select this engine and machine again (" --engine sim --seed 1 ...").
  std::string reproduce;
  /// The GPU memory model the plan's budget comes from (plan/gpu_budget.h).
  GpuMemoryBudget gpu;
};

/// The simulated engine on the what-if machine of `sim` (its GPU memory flags
/// `sim.machine.gpu` included).
Result<TuneEngine> SimTuneEngine(const SimBenchOptions& sim);

/// The real engine found from `llama_dir` (else MOETUNE_LLAMA_DIR, the
/// default, PATH) after the doctor's checks of this machine: a critical
/// finding stops the tune (printed to stderr) unless `force`. The GPU budget
/// is `gpu` over what the doctor measured now. With `rpc` (--rpc's value) or
/// a --vram list, tune searches across the devices `gpu` lists (RPC0.. for
/// the servers of `rpc`, each checked before anything is measured).
Result<TuneEngine> RealTuneEngine(const std::string& llama_dir, bool force,
                                  const GpuBudgetOptions& gpu = {}, const std::string& rpc = "");

}  // namespace moetune
