#pragma once
/// `plan --check`: moetune's prediction for a placement beside llama.cpp's own
/// dry run (llama-fit-params -fitp on), device by device, with the differences
/// and whether they are within the tolerances the memory map promises:
/// weights and context (KV + recurrent state) 1%, compute buffers 15%
/// (plus 1 MiB, since the engine prints whole MiB, truncated).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/fit_params.h"
#include "plan/placement.h"

namespace moetune {

struct CheckRow {
  std::string device;  // engine's name: "Host", "CUDA0", ...
  std::string side;    // which prediction it is compared with: "gpu", "host", "all-host"
  int64_t predicted_model = 0, predicted_context = 0, predicted_compute = 0;
  int64_t engine_model = 0, engine_context = 0, engine_compute = 0;
  bool model_ok = false, context_ok = false, compute_ok = false;
  bool ok() const { return model_ok && context_ok && compute_ok; }
};

struct PlanCheck {
  int n_cpu_moe = 0;
  int ngl = 0;
  std::vector<CheckRow> rows;
  std::vector<std::string> notes;
  std::vector<std::string> argv;
  bool agrees() const;
};

/// Within `rel` of the engine's figure, allowing the engine's 1 MiB truncation.
bool WithinTolerance(int64_t predicted, int64_t engine, double rel);

/// Compares `option` (a placement of `plan`) with the engine's devices. When
/// the engine reports no GPU (a CPU-only machine, or a build without a GPU
/// backend), everything it places is on the host: the Host line is compared
/// with the all-host prediction, and a note says so.
PlanCheck ComparePlanWithEngine(const ModelArch& arch, const WeightMap& weights,
                                const PlanRequest& request, const PlacementOption& option,
                                const std::vector<FitParamsDevice>& devices);

nlohmann::json PlanCheckJson(const PlanCheck& check);
std::string PlanCheckText(const PlanCheck& check);

}  // namespace moetune
