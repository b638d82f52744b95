#pragma once
/// `plan --predict`: the speed model applied to every placement of a plan, at
/// depth 0 and at the target context, and the predicted best safe placement.
///
/// The best safe N is the option that fits (the plan's rule, with its margin, at
/// the target context) and answers a workload fastest: time = prompt tokens /
/// prefill + answer tokens / decode, both at the target depth. Options within
/// `tie` of the fastest are ties and the more conservative one (more layers on
/// the CPU) wins.

#include <optional>
#include <string>
#include <vector>

#include "plan/placement.h"
#include "speed/speed_model.h"

namespace moetune {

struct PlanPredictionOptions {
  int threads = 0;             // 0 = the machine's performance cores
  int n_prompt = 512;          // prefill test size
  int n_gen = 128;             // decode test size
  int workload_prompt = 1024;  // objective: one chat turn
  int workload_answer = 256;
  double tie = 0.02;
  /// The band of `constants` (calibrated or not), carried by every prediction.
  PredictionUncertainty uncertainty = UncalibratedUncertainty();
};

struct OptionPrediction {
  int n_cpu_moe = 0;
  int ngl = 0;
  bool fits = false;            // the plan's rule
  SpeedPrediction depth0;       // at depth 0 (context allocated for the target)
  SpeedPrediction target;       // at the target depth (context minus the test)
  double workload_seconds = 0;  // at the target depth; 0 when it does not load
};

struct PlanPrediction {
  std::vector<OptionPrediction> options;  // parallel to Plan::options
  std::optional<size_t> best;             // index of the predicted best safe option
  bool placement_matters = true;          // false without an accelerator
  int target_depth = 0;
  int threads = 0;
  std::string machine;                // MachineSpec::label
  bool calibrated = false;            // constants calibrated on this machine (else the defaults)
  PredictionUncertainty uncertainty;  // how far the machine may measure from these figures
  std::vector<std::string> notes;
};

/// The smallest --n-cpu-moe that loads for `proto` on `model`'s machine in strict
/// mode (the predicted boundary a tuner measures around); nullopt when even
/// every expert on the CPU does not load.
std::optional<int> FirstLoadingNCpuMoe(const SpeedModel& model, RunSettings proto);

/// Predicts every option of `plan` (for `request`'s context) on `machine`.
Result<PlanPrediction> PredictPlan(const ModelInfo& model, const Plan& plan,
                                   const PlanRequest& request, const MachineSpec& machine,
                                   const CalibrationConstants& constants,
                                   const PlanPredictionOptions& options = {});

}  // namespace moetune
