#pragma once
/// The Engine interface: run configurations in, results out. Failures are
/// results too (RunResult::failure), so a sweep always returns one result per
/// configuration and a tuner can treat an out-of-memory placement as data.
/// Implementations: LlamaBenchEngine (the real llama.cpp); fakes in tests.

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/failure.h"
#include "engine/run_config.h"

namespace moetune {

/// One engine process started for a group of configurations.
struct InvocationReport {
  std::vector<std::string> argv;
  std::vector<std::size_t> configs;  // indices into the input configurations
  /// Model loads counted in the engine's own log; -1 when not counted.
  int model_loads = -1;
  double wall_seconds = 0;
  std::string exit;  // "exit code 0", "signal 9 (SIGKILL)"
  bool timed_out = false;
  /// Ended (or not started) because the caller's time limit was reached
  /// (Engine::set_time_limit): its configurations failed as kTimeout, which
  /// says nothing about them.
  bool time_limit_reached = false;
  std::optional<EngineFailure> failure;
  /// Other processes' CPU use while it ran, in cores (hw/machine_load.h).
  std::optional<double> other_cpu_cores;
};

/// Everything one Run produced.
struct BenchRun {
  std::vector<RunResult> results;  // one per input configuration, same order
  std::vector<InvocationReport> invocations;
  /// The engine's `backends` field from the first result ("CPU", "CUDA", ...).
  std::string backends;

  int TotalModelLoads() const;
  std::size_t FailureCount() const;
};

/// Where a run stands, for progress lines with an ETA.
struct BenchProgress {
  std::size_t tests_done = 0;
  std::size_t tests_total = 0;
  std::size_t invocation = 0;  // 1-based index of the running process
  std::size_t invocations_total = 0;
  double elapsed_seconds = 0;
  std::string current;  // the test now running, e.g. "pp512 t=4"
};
using ProgressCallback = std::function<void(const BenchProgress&)>;

class Engine {
 public:
  virtual ~Engine() = default;
  /// Measures every configuration (as few model loads as possible).
  virtual BenchRun Run(const std::vector<RunConfig>& configs,
                       const ProgressCallback& progress = {}) = 0;
  /// Convenience for a single configuration.
  RunResult RunOne(const RunConfig& config) { return Run({config}).results.at(0); }

  /// The most seconds each following Run may take (the time a tune's budget
  /// has left); nullopt: no limit. An engine that honours it ends the
  /// invocation that reaches it and marks it (InvocationReport::
  /// time_limit_reached); one that cannot ignores it.
  void set_time_limit(std::optional<double> seconds) { time_limit_ = seconds; }
  std::optional<double> time_limit() const { return time_limit_; }

 private:
  std::optional<double> time_limit_;
};

}  // namespace moetune
