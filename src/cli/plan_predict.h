#pragma once
/// The `plan --predict` hook: the machine from the profile and what-if flags,
/// with the plan's own --vram/--reserve, and the speed model over every option.

#include <string>

#include "cli/machine_flags.h"
#include "model/model_info.h"
#include "plan/placement.h"
#include "speed/plan_prediction.h"

namespace moetune {

/// Predicts `plan` on the machine the flags describe (the plan's budget wins).
Result<PlanPrediction> PredictForPlan(const ModelInfo& model, const Plan& plan,
                                      const PlanRequest& request, const MachineFlags& flags,
                                      int threads);

}  // namespace moetune
