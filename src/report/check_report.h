#pragma once
/// The exporters of `plan --check` (plan/check.h): one per format.

#include <nlohmann/json.hpp>
#include <string>

#include "plan/check.h"

namespace moetune {

/// The "check" object of `plan --check --json` (docs/cli.md, "## plan").
nlohmann::json PlanCheckJson(const PlanCheck& check);

/// The table of predicted against engine sizes per device, with the verdict.
std::string PlanCheckText(const PlanCheck& check);

}  // namespace moetune
