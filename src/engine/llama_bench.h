#pragma once
/// The Engine for llama.cpp's llama-bench. Configurations that share model
/// parameters (placement, load mode, repetitions) go into one invocation with
/// comma lists for threads, micro-batch, batch, depth, cache types and test
/// sizes, so the model loads once; placement changes start a new process.
/// Every process runs in its own group with a timeout; its JSONL is parsed by
/// field name and its model loads are counted from its verbose log.

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_info.h"

namespace moetune {

struct LlamaBenchOptions {
  /// Time limit per test; an invocation gets this times its number of tests
  /// (plus `load_allowance` per expected model load).
  std::chrono::milliseconds timeout_per_test{300000};
  std::chrono::milliseconds load_allowance{120000};
  /// Pass -v so that model loads can be counted from the log (costs nothing
  /// measurable: the extra lines are written outside the timed regions except
  /// for one short line per graph).
  bool count_loads = true;
  /// Extra environment for the engine (e.g. GGML_* variables).
  std::vector<std::pair<std::string, std::string>> env;
  /// Called with every stderr line that is not noise (for --verbose).
  std::function<void(std::string_view)> on_engine_line;
};

class LlamaBenchEngine : public Engine {
 public:
  explicit LlamaBenchEngine(EngineInfo info, LlamaBenchOptions options = {});

  BenchRun Run(const std::vector<RunConfig>& configs,
               const ProgressCallback& progress = {}) override;

  /// One planned process: which (unique) configurations it measures and its argv.
  struct Invocation {
    std::vector<std::size_t> configs;  // indices into the input
    std::vector<std::string> argv;
    /// Set when the engine cannot express this group (e.g. -d on a build
    /// without it): the configurations fail with kInvalidConfig unrun.
    std::optional<std::string> unsupported;
  };
  /// The invocations Run would start, in order (exposed for tests and --dry-run).
  std::vector<Invocation> PlanInvocations(const std::vector<RunConfig>& configs) const;

  const EngineInfo& info() const { return info_; }

 private:
  struct RunProgress;
  std::vector<std::string> BuildArgv(const std::vector<const RunConfig*>& group,
                                     std::optional<std::string>* unsupported) const;
  /// Runs one planned llama-bench process and stores its results (or why
  /// they failed) in `*run`.
  void RunInvocation(const Invocation& inv, const std::vector<RunConfig>& configs, RunProgress* st,
                     BenchRun* run) const;

  EngineInfo info_;
  LlamaBenchOptions options_;
};

/// The -ot pattern that keeps the experts of layers 0..n-1 on the CPU, for
/// engines without -ncmoe (same regex as llama.cpp's --n-cpu-moe, common/arg.cpp).
std::string CpuMoeOverride(int n_cpu_moe);

}  // namespace moetune
