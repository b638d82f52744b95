#pragma once
/// What a placement allocates on the accelerator, from the memory map and the
/// plan's device model (plan/placement.h), and what part of it spills to host
/// memory in silent mode.
///
/// Allocation order in llama.cpp: weights at model load (llama_model_load), then
/// the KV cache and recurrent state (llama_context constructor, memory module),
/// then the compute buffers (ggml_backend_sched_reserve). In strict mode the first
/// allocation that does not fit fails; in silent mode the last allocations are the
/// ones that end up in host memory, and the KV cache only occupies the cells that
/// are used (pages of managed / WDDM memory become resident on first touch).

#include <cstdint>
#include <memory>
#include <string>

#include "model/memory_map.h"
#include "model/model_info.h"
#include "perf/model_shape.h"

namespace moetune {

struct RunSettings;  // perf/speed_model.h, which holds a FootprintPlans

struct GpuFootprint {
  int64_t weights = 0;
  int64_t kv = 0;       // allocated KV cache of the GPU layers
  int64_t kv_used = 0;  // the part the test's cells occupy
  int64_t state = 0;
  int64_t compute = 0;
  int64_t compute_stage = 0;  // one layer's activations for one micro-batch (FFN stage + mask)

  int64_t allocated() const { return weights + kv + state + compute; }
  int64_t touched() const { return weights + kv_used + state + compute; }
};

struct Plan;

/// The context `run` allocates: its n_ctx, else prompt + generation + depth
/// (llama-bench sizes its context so).
ContextParams FootprintContext(const RunSettings& run);

/// Plans of one model by context, kept for the footprints of many runs with
/// the same context (a conversation, a sweep over depths or threads): planning
/// every option is the expensive part of a prediction (~0.1 s for 48 layers).
/// Copies share the cache; safe to use from several threads.
class FootprintPlans {
 public:
  FootprintPlans();
  /// The plan of `model` for `ctx`, null when the planner cannot size it.
  /// Every call must pass the same model.
  std::shared_ptr<const Plan> Get(const ModelInfo& model, const ContextParams& ctx) const;

 private:
  struct Cache;
  std::shared_ptr<Cache> cache_;
};

/// Footprint of `run` on the accelerator (all zero without one). `plans`
/// (optional) caches the model's plans by context.
GpuFootprint ComputeGpuFootprint(const ModelInfo& model, const ModelShape& shape,
                                 const Residency& residency, const RunSettings& run,
                                 bool has_accelerator, const FootprintPlans* plans = nullptr);

/// Shares of each allocation that live in host memory (silent spill).
struct SpillShares {
  int64_t bytes = 0;
  double compute = 0;  // 0..1
  double kv = 0;
  double weights = 0;
};

/// Fills the budget in allocation order and returns what does not fit (silent mode).
SpillShares ComputeSpill(const GpuFootprint& f, int64_t budget);

/// In strict mode: the llama.cpp error lines for the first allocation that does
/// not fit, or "" when everything fits.
std::string StrictFailure(const GpuFootprint& f, int64_t budget, const std::string& device);

}  // namespace moetune
