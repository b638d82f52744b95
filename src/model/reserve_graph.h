#pragma once
/// Rebuilds the graph llama.cpp reserves its compute buffers for: the
/// worst-case prompt-processing ubatch of src/llama-context.cpp
/// (graph_reserve(n_tokens = min(n_ctx, n_ubatch), n_seqs = kv_unified ? 1 :
/// n_seq_max, n_outputs = n_tokens) with the full KV cache), as the model's
/// build function in src/models/*.cpp and the helpers of src/llama-graph.cpp
/// (build_inp_embd, build_attn / build_attn_mha, build_ffn, build_moe_ffn,
/// build_rs) create it, tensor by tensor, in ggml_build_forward_expand order.
///
/// Architectures: llama (dense and Mixtral MoE), qwen2, qwen3, qwen2moe,
/// qwen3moe, qwen3next, qwen35moe / qwen35 (Gated DeltaNet hybrids), gpt-oss,
/// glm4moe, deepseek2 (MLA), llama4. Others are built as llama-style layers
/// from the tensors the file has, which is approximate.

#include <string_view>
#include <unordered_map>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/graph_sim.h"
#include "model/memory_map.h"
#include "model/weight_placement.h"
#include "util/result.h"

namespace moetune {

/// Buffer indices the graph uses for pre-allocated tensors: the devices
/// 0..DeviceCount()-1, then the host (CPU); without a device, 0 = the host.
struct ReserveDevices {
  int device = -1;  // the first device; -1 when there is none
  int host = 0;
};

ReserveDevices ReserveDeviceIndices(const WeightPlacement& placement);

/// Tensor name -> index into GgufModel::tensors (views into the model's names:
/// valid while the model lives). Built once per model, shared by every graph.
using TensorIndex = std::unordered_map<std::string_view, size_t>;
TensorIndex IndexTensors(const GgufModel& model);

/// Builds the reserve graph. `layout` must come from LayoutContext(cp).
/// Layers are taken as they are; for very deep models only a representative
/// subset of layers is built (every layer kind and placement boundary is
/// kept, see docs/memory.md), which leaves the peak unchanged.
Result<SimGraph> BuildReserveGraph(const GgufModel& model, const ModelArch& arch,
                                   const TensorIndex& index, const ContextParams& cp,
                                   const ContextLayout& layout, const WeightPlacement& placement);

}  // namespace moetune
