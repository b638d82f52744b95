#pragma once
/// What a placement allocates on the accelerator, from the memory map and the
/// plan's device model (plan/placement.h), plus the CUDA runtime's own share.
///
/// Allocation order in llama.cpp: the CUDA context at backend initialisation,
/// weights at model load (llama_model_load), then the KV cache and recurrent
/// state (llama_context constructor, memory module), then the compute buffers
/// (ggml_backend_sched_reserve); ggml's memory pool grows at the first graphs.
/// In strict mode the first allocation that does not fit fails; silent mode is
/// speed/spill.h.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/model_info.h"
#include "plan/placement.h"
#include "speed/model_shape.h"
#include "speed/speed_model.h"

namespace moetune {

struct GpuFootprint {
  int64_t runtime =
      0;  // CUDA context, cuBLAS workspace, ggml's pool (AcceleratorSpec::runtime_bytes)
  int64_t weights = 0;
  int64_t kv = 0;       // allocated KV cache of the GPU layers
  int64_t kv_used = 0;  // the part the test's cells occupy
  int64_t state = 0;
  int64_t compute = 0;
  int64_t compute_stage = 0;  // one layer's activations for one micro-batch (FFN stage + mask)

  int64_t allocated() const { return runtime + weights + kv + state + compute; }
  int64_t touched() const { return runtime + weights + kv_used + state + compute; }
};

/// The context `run` allocates: its n_ctx, else prompt + generation + depth
/// (llama-bench sizes its context so).
ContextParams FootprintContext(const RunSettings& run);

/// The plan's device model of one model for each context asked for, computed
/// once per distinct context: planning every N costs tens of milliseconds, and
/// a speed model is asked about the same context for every placement, thread
/// count and repetition. Thread-safe; bounded (the oldest half is dropped).
class FootprintPlans {
 public:
  /// The context settings that size a plan.
  using Key = std::tuple<int64_t, int, bool, uint32_t, uint32_t, int64_t, int64_t, bool, bool, int>;
  /// The plan for `ctx` with unlimited VRAM and no margin; null when the
  /// planner cannot size the model.
  std::shared_ptr<const Plan> Get(const ModelInfo& model, const ContextParams& ctx);
  /// The memory map of one placement across devices for `ctx` (plan/placement.h
  /// EvaluatePlacement), kept under `key` (the caller's name for the placement);
  /// null when the memory map cannot size it.
  std::shared_ptr<const PlacementOption> Evaluate(const ModelInfo& model, const ContextParams& ctx,
                                                  const WeightPlacement& placement,
                                                  const std::vector<DeviceKind>& kinds,
                                                  const std::string& key);

 private:
  static constexpr std::size_t kMaxPlans = 256;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<const Plan>> plans_;
  std::map<std::pair<Key, std::string>, std::shared_ptr<const PlacementOption>> evaluated_;
};

/// Footprint of `run` on `accel` (all zero without one). `plans` (optional)
/// memoizes the plans across calls.
GpuFootprint ComputeGpuFootprint(const ModelInfo& model, const ModelShape& shape,
                                 const Residency& residency, const RunSettings& run,
                                 const AcceleratorSpec* accel, FootprintPlans* plans = nullptr);

/// Footprints of `run` on each of several devices (`devices[i]` holds the
/// placement's device i; `kinds` how each treats host weights), from the memory
/// map of the whole placement. `key` names the placement for the cache.
std::vector<GpuFootprint> ComputeDeviceFootprints(const ModelInfo& model,
                                                  const WeightPlacement& placement,
                                                  const RunSettings& run,
                                                  const std::vector<AcceleratorSpec>& devices,
                                                  const std::string& key, FootprintPlans* plans);

/// In strict mode: the llama.cpp error lines for the first allocation that does
/// not fit, or "" when everything fits.
std::string StrictFailure(const GpuFootprint& f, int64_t budget, const std::string& device);

}  // namespace moetune
