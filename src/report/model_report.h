#pragma once
/// Text and JSON renderings of `inspect` and `plan` (fields documented in docs/cli.md).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model_info.h"
#include "plan/placement.h"

namespace moetune {

/// Contexts shown by `inspect` when none are given.
std::vector<int64_t> DefaultInspectContexts();

nlohmann::json InspectJson(const ModelInfo& m, const std::vector<int64_t>& contexts);
std::string InspectText(const ModelInfo& m, const std::vector<int64_t>& contexts);

nlohmann::json PlanJson(const ModelInfo& m, const Plan& plan, const PlanRequest& req);
std::string PlanText(const ModelInfo& m, const Plan& plan, const PlanRequest& req);

}  // namespace moetune
