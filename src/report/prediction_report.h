#pragma once
/// `plan --predict` output: the predicted speeds added to the plan's JSON
/// (options[].predicted, predicted_best) and a text table.

#include <nlohmann/json.hpp>
#include <string>

#include "plan/placement.h"
#include "speed/plan_prediction.h"

namespace moetune {

/// JSON of one prediction: tokens/s of both phases, binding resources, time split.
nlohmann::json SpeedPredictionJson(const SpeedPrediction& p);

/// Adds `options[i].predicted` and `predicted_best` to `PlanJson`'s output.
void AddPlanPredictionJson(const Plan& plan, const PlanPrediction& pred, nlohmann::json* plan_json);

/// The text section printed after the plan.
std::string PlanPredictionText(const Plan& plan, const PlanPrediction& pred);

}  // namespace moetune
