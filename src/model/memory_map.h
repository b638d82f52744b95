#pragma once
/// The exact memory picture of a model: weight bytes by layer and role, the
/// bytes read per generated token, the KV cache and recurrent state for a
/// context, and an estimate of llama.cpp's compute buffers.
///
/// Formulas mirror llama.cpp (upstream ggml-org/llama.cpp, late 2026):
///   n_ctx padding ......... src/llama-context.cpp  cparams.n_ctx = GGML_PAD(n_ctx, 256)
///   KV per layer .......... src/llama-kv-cache.cpp  row_size(type_k, n_embd_k_gqa) * kv_size
///   SWA/chunked cache ..... src/llama-kv-cache-iswa.cpp
///                           size_swa = GGML_PAD(min(kv_size, n_swa*(unified ? n_seq : 1) +
///                           n_ubatch), 256)
///   recurrent state ....... src/llama-memory-recurrent.cpp  f32, (n_embd_r + n_embd_s) per layer
///   per sequence compute buffers ....... an estimate, see EstimateCompute and docs/memory.md.

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "util/units.h"

namespace moetune {

using RoleBytes = std::array<int64_t, kTensorRoleCount>;
inline int64_t& At(RoleBytes& rb, TensorRole r) { return rb[static_cast<size_t>(r)]; }
inline int64_t At(const RoleBytes& rb, TensorRole r) { return rb[static_cast<size_t>(r)]; }
int64_t Sum(const RoleBytes& rb);

struct LayerWeights {
  int layer = 0;
  RoleBytes bytes{};
  int64_t total() const { return Sum(bytes); }
  /// What `--n-cpu-moe` keeps in host memory for this layer (routed experts only;
  /// shared experts are not moved, llama-cpp.md).
  int64_t experts() const { return At(bytes, TensorRole::kRoutedExperts); }
};

/// Weights of a model by layer and role.
struct WeightMap {
  std::vector<LayerWeights> layers;
  RoleBytes global{};  // tensors outside blk.N (token_embd, output, output_norm, ...)
  int64_t total = 0;
  /// Bytes read to generate one token: everything in the layers except that
  /// only n_expert_used of n_expert routed experts are read, plus the output
  /// head (one row of token_embd is negligible). Needed for speed modelling.
  int64_t bytes_per_token = 0;
  int64_t expert_total() const;
  int64_t by_role(TensorRole r) const;
};

WeightMap ComputeWeightMap(const GgufModel& model, const ModelArch& arch);

/// Context settings that size the memory llama.cpp allocates.
struct ContextParams {
  int64_t n_ctx = 4096;
  int n_seq = 1;           // parallel sequences (llama-server -np)
  bool kv_unified = true;  // llama-server's default when -np is auto; llama-bench uses 1 sequence
  uint32_t type_k = 1;     // ggml type ids (f16)
  uint32_t type_v = 1;
  int n_ubatch = 512;
  int n_batch = 2048;
  bool flash_attn = true;  // llama.cpp's -fa auto enables it where supported (CPU, CUDA)
  bool swa_full = false;
};

struct LayerContext {
  int layer = 0;
  int64_t cells = 0;  // KV cells for this layer (0 for recurrent)
  int64_t k_bytes = 0;
  int64_t v_bytes = 0;
  int64_t state_bytes = 0;  // recurrent state (all sequences)
};

struct ContextMemory {
  int64_t n_ctx_padded = 0;
  std::vector<LayerContext> layers;
  int64_t kv_bytes = 0;          // K + V, all layers
  int64_t kv_growing_bytes = 0;  // part that grows with context (full / MLA layers)
  int64_t state_bytes = 0;       // recurrent state, all layers and sequences
  int64_t total() const { return kv_bytes + state_bytes; }
};

ContextMemory ComputeContextMemory(const ModelArch& arch, const ContextParams& cp);

/// KV bytes per token of context for the layers whose cache grows with context.
int64_t KvBytesPerToken(const ModelArch& arch, uint32_t type_k = 1, uint32_t type_v = 1);

/// Compute-buffer estimate for one device, for the worst-case reserve graph
/// llama.cpp builds (n_ubatch tokens, all of them outputs: src/llama-context.cpp
/// graph_reserve). ggml-alloc keeps the graph inputs (the KQ masks) alive for the
/// whole graph and reuses everything else, so the buffer is the masks plus the
/// widest stage. Checked against llama-fit-params in tests (docs/memory.md).
struct ComputeEstimate {
  int64_t masks = 0;      // KQ mask(s): f16 [n_kv, n_ubatch] with flash attention, f32 without
  int64_t scores = 0;     // KQ scores f32 [n_kv, n_ubatch, n_head] when flash attention is off
  int64_t logits = 0;     // output stage: logits f32 [n_vocab, n_ubatch] + hidden state
  int64_t ffn = 0;        // widest FFN / MoE stage
  int64_t recurrent = 0;  // linear-attention stage
  int64_t total() const { return masks + scores + std::max(logits, std::max(ffn, recurrent)); }
};

ComputeEstimate EstimateCompute(const ModelArch& arch, const ContextParams& cp);

}  // namespace moetune
