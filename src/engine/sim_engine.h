#pragma once
/// The simulated engine: the Engine interface answered by the speed model on a
/// (what-if) machine, with seeded, realistic noise: repetitions spread by the
/// thread placement's variance, occasional slow outliers, placements that fail
/// to load in strict mode (the same failure kind the real engine reports for a
/// device out-of-memory), and the slowdown of silent spill. Every result is
/// marked simulated: its record carries "simulated": true and its backends field
/// starts with "SIM".
///
/// Reproducible: the samples of a configuration depend only on the seed, the
/// configuration (the model by its file name, not its folder) and how many
/// times this engine has run it before (a repeated measurement draws fresh
/// noise, as a real one would), not on the order or the company it is run in.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "engine/engine.h"
#include "engine/engine_info.h"
#include "model/model_info.h"
#include "speed/calibration.h"
#include "speed/gpu_footprint.h"
#include "speed/machine_spec.h"
#include "speed/speed_model.h"

namespace moetune {

/// The speed model's plans of each model file, by path: shared between
/// simulated engines that run the same files (repeated runs, seeds), since
/// planning is the expensive part of a prediction.
class SimPlanCache {
 public:
  std::shared_ptr<FootprintPlans> For(const std::string& model_path);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<FootprintPlans>> plans_;
};

struct SimEngineOptions {
  MachineSpec machine;
  CalibrationConstants constants;
  /// The band the simulated speeds carry (the constants' uncertainty).
  PredictionUncertainty uncertainty = UncalibratedUncertainty();
  uint64_t seed = 1;
  double outlier_probability = 0.04;  // chance that a repetition is disturbed
  double outlier_max_slowdown = 2.0;  // a disturbed repetition is 1.25x..this much slower
  double load_gbps = 2.0;             // simulated model load rate (page cache / NVMe)
  /// Background load: other processes' CPU use, in cores, while the k-th
  /// result is simulated (k counts every result of every Run from 0); empty =
  /// a quiet machine. A busy core takes its share of the run's threads (the
  /// run is 1 + cores/threads times slower), and the result is marked with
  /// the load as the real engine's measurement marks it (other_cpu_cores).
  std::function<double(std::size_t result_index)> background_cores;
  /// Thermal throttling: the k-th result (of `config`) runs this many times
  /// slower (1 = full speed); unlike background load, nothing on the machine
  /// shows it.
  std::function<double(std::size_t result_index, const RunConfig& config)> throttle;
  /// Plans shared with other engines; null: each speed model keeps its own.
  std::shared_ptr<SimPlanCache> plans;
};

class SimEngine : public Engine {
 public:
  explicit SimEngine(SimEngineOptions options);

  BenchRun Run(const std::vector<RunConfig>& configs,
               const ProgressCallback& progress = {}) override;

  /// How this engine presents itself in reports (`moetune bench --json`'s "engine").
  EngineInfo Info() const;
  /// "SIM CUDA (NVIDIA GeForce RTX 4070 12 GB)", "SIM CPU", "SIM RPC (...)".
  std::string BackendsLabel() const;

  const SimEngineOptions& options() const { return options_; }

 private:
  /// The model's speed model on this machine (kept: it memoizes memory plans).
  Result<const SpeedModel*> Model(const std::string& path);
  /// One result of an invocation whose model loaded: its repetitions (seeded
  /// noise around the speed model's time) and record, or why it failed; adds
  /// the simulated seconds to `*wall`.
  void Simulate(const SpeedModel& sm, const std::string& backends, RunResult* res,
                InvocationReport* inv, double* wall);

  /// Simulate within the caller's time limit (Engine::set_time_limit), with
  /// `spent` simulated seconds of this Run before the invocation: a result
  /// that would start or end past it fails as kTimeout, the invocation is
  /// marked ended by the limit, and `*wall` stops at it.
  void SimulateWithinLimit(const SpeedModel& sm, const std::string& backends, double spent,
                           RunResult* res, InvocationReport* inv, double* wall);

  SimEngineOptions options_;
  std::map<std::string, std::unique_ptr<ModelInfo>> models_;
  std::map<std::string, std::unique_ptr<SpeedModel>> speed_models_;
  std::map<std::string, uint64_t> runs_;  // earlier runs of each configuration
  std::size_t results_simulated_ = 0;     // the index background_cores is asked for
};

}  // namespace moetune
