#pragma once
/// llama.cpp's compute buffers, predicted per device: the worst-case reserve
/// graph (model/reserve_graph.h) scheduled over the devices and allocated as
/// ggml does (model/graph_alloc_sim.h). No fitted constants: the sizes come
/// from the graph's tensors and ggml's allocation rules.
///
/// The device kind matters for ops whose weights stay in host memory: CUDA
/// computes them on the GPU for batches of at least 32 tokens and copies the
/// weights into its compute buffer (op offload, GGML_OP_OFFLOAD_MIN_BATCH);
/// the RPC backend does not offload, so those ops run on the CPU and their
/// activations are copied across instead.

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/memory_map.h"
#include "model/weight_placement.h"
#include "util/result.h"

namespace moetune {

enum class DeviceKind { kCuda, kRpc };

/// GGML_SCHED_MAX_COPIES: the scheduler's copies of its inputs with pipeline
/// parallelism (ggml/src/ggml-backend.cpp).
inline constexpr int kPipelineCopies = 4;

/// llama.cpp's pipeline parallelism (llama_context's constructor,
/// src/llama-context.cpp): on when the model spans more than one device, every
/// layer and the output head are offloaded (n_gpu_layers > n_layer), the split
/// mode is by layer, the KV cache is offloaded and the command carries no
/// tensor override (no --n-cpu-moe, no -ot); the devices must support async
/// compute and events, which CUDA and RPC (0.7.0: "pipeline parallelism
/// enabled" over two ggml-rpc-servers) do. The scheduler then keeps
/// kPipelineCopies copies of every graph input and split input for the whole
/// graph (model/graph_alloc_sim.h), which makes every compute buffer larger:
/// 168 / 365 / 72 MiB instead of 92 / 301 / 24 MiB for Qwen3-30B-A3B at 8K
/// on two RPC devices (-ts 24,25).
bool PipelineParallel(const WeightPlacement& placement, int n_layer);

struct ComputeBuffers {
  int64_t device = 0;               // the devices' compute buffers together (0 without one)
  std::vector<int64_t> per_device;  // each device's, in device order
  int64_t host = 0;                 // the CPU's compute buffer
  int n_splits = 0;                 // graph splits of the reserve graph
  int64_t total() const { return device + host; }
};

/// Estimates for one model: indexes its tensors once, so that planners that
/// try many placements pay for the index once (keep the model alive).
class ComputeEstimator {
 public:
  ComputeEstimator(const GgufModel& model, const ModelArch& arch);
  /// Compute buffers for `cp` with the weights placed as `placement` says.
  /// Errors: an invalid context, or tensor sizes that overflow 64 bits.
  Result<ComputeBuffers> Estimate(const ContextParams& cp, const WeightPlacement& placement,
                                  DeviceKind kind = DeviceKind::kCuda) const;
  /// The same with each device's kind (`kinds` has one per device of the placement;
  /// a single kind applies to every device).
  Result<ComputeBuffers> Estimate(const ContextParams& cp, const WeightPlacement& placement,
                                  const std::vector<DeviceKind>& kinds) const;

 private:
  const GgufModel& model_;
  const ModelArch& arch_;
  std::unordered_map<std::string_view, size_t> index_;
};

/// One-off ComputeEstimator(model, arch).Estimate(cp, placement, kind).
Result<ComputeBuffers> EstimateComputeBuffers(const GgufModel& model, const ModelArch& arch,
                                              const ContextParams& cp,
                                              const WeightPlacement& placement,
                                              DeviceKind kind = DeviceKind::kCuda);

/// All on the CPU (no device): the host compute buffer alone.
Result<int64_t> EstimateHostOnlyCompute(const GgufModel& model, const ModelArch& arch,
                                        const ContextParams& cp);

}  // namespace moetune
