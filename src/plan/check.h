#pragma once
/// `plan --check`: moetune's prediction for a placement beside llama.cpp's own
/// dry run (llama-fit-params -fitp on), device by device, with the differences
/// and whether they are within the tolerances the memory map promises:
/// weights and context (KV + recurrent state) 1%, compute buffers 15%
/// (plus 1 MiB, since the engine prints whole MiB, truncated).
///
/// The engine's figures come in as EngineDeviceSizes (the command layer
/// converts the engine's report); plan never runs the engine itself.

#include <string>
#include <string_view>
#include <vector>

#include "plan/placement.h"

namespace moetune {

/// The tolerances of the check: relative to the engine's figure.
inline constexpr double kCheckModelTolerance = 0.01;
inline constexpr double kCheckContextTolerance = 0.01;
inline constexpr double kCheckComputeTolerance = 0.15;

/// The llama.cpp version whose compute-buffer sizes moetune's rules follow
/// (docs/memory.md). Other versions reserve somewhat different compute
/// buffers: 0.4.0's are mostly smaller (docs/engine.md, the compatibility table).
inline constexpr std::string_view kComputeRulesEngineVersion = "0.7.0";

/// One device line of the engine's dry run, in bytes (MiB precision).
struct EngineDeviceSizes {
  std::string name;  // "Host", "CUDA0", "RPC0", ...
  int64_t model = 0;
  int64_t context = 0;
  int64_t compute = 0;
  int64_t free = 0;  // the device's free memory, when known (llama.cpp's default split)
};

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
  Placement placement;      // the checked placement (its flags head the text)
  std::string device_kind;  // "all-host", "CUDA", "RPC", "mixed": the compute rules used
  std::vector<CheckRow> rows;
  std::vector<std::string> notes;
  std::vector<std::string> argv;
  bool agrees() const;
  /// True when the check disagrees only on compute buffers, each one
  /// predicted larger than the engine's (the safe side): what an engine whose
  /// compute buffers are smaller than the ones the rules follow produces.
  bool OnlyComputeOverPredicted() const;
};

/// Within `rel` of the engine's figure, allowing the engine's 1 MiB truncation.
bool WithinTolerance(int64_t predicted, int64_t engine, double rel);

/// Compares the configuration `config` with the engine's devices. When the
/// engine reports no device besides the host (a CPU-only machine, or a build
/// without a GPU backend), everything it places is on the host: its Host line
/// is compared with moetune's all-host prediction, and a note says so. With
/// devices (CUDA0, RPC0, RPC1, ...), each line is compared with the prediction
/// for that device (the engine lists them in the placement's order), computed
/// with each device's rule for host-resident weights (RPC devices do not
/// offload, model/compute_buffers.h).
Result<PlanCheck> ComparePlanWithEngine(const GgufModel& model, const ModelArch& arch,
                                        const WeightMap& weights, const ServerConfig& config,
                                        const std::vector<EngineDeviceSizes>& devices);

}  // namespace moetune
