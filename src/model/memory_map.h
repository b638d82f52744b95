#pragma once
/// The exact memory picture of a model: weight bytes by layer and role, the
/// bytes read per generated token, and the KV cache and recurrent state for a
/// context. Compute buffers are in model/compute_buffers.h.
///
/// Formulas mirror llama.cpp (upstream ggml-org/llama.cpp; checked against
/// the installed engine, Debian's 0.7.0 build 11669):
///   context sizes ......... src/llama-context.cpp  llama_context::llama_context:
///                           n_batch = min(n_ctx, n_batch) (causal models),
///                           n_ubatch = min(n_batch, n_ubatch); the cache holds
///                           GGML_PAD(n_ctx, 256) cells, or, with one stream per
///                           sequence (no -kvu), n_seq streams of
///                           GGML_PAD(n_ctx / n_seq, 256) cells each (n_ctx_seq)
///   KV per layer .......... src/llama-kv-cache.cpp  row_size(type_k, n_embd_k_gqa) * cells
///   SWA/chunked cache ..... src/llama-kv-cache-iswa.cpp
///                           size_swa = min(size_base, GGML_PAD(n_swa * (unified ?
///                           n_seq : 1) + n_ubatch, 256)) cells per stream
///   recurrent state ....... src/llama-memory-recurrent.cpp  f32, (n_embd_r + n_embd_s)
///                           per layer and sequence
/// All sizes use checked arithmetic: absurd headers or contexts are errors.

#include <array>
#include <cstdint>
#include <vector>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "util/result.h"
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

/// How many outputs (logits rows) the worst-case graph is reserved for: the
/// installed engine's llama-fit-params (and llama.cpp's --fit) reserve one per
/// token of the ubatch; llama-server reserves one per sequence (n_seq_max), so
/// its compute buffer can be smaller by most of the logits.
enum class ReserveOutputs { kAllTokens, kPerSequence };

/// Context settings that size the memory llama.cpp allocates.
struct ContextParams {
  int64_t n_ctx = 4096;     // -c
  int n_seq = 1;            // parallel sequences (llama-server -np)
  bool kv_unified = false;  // -kvu: one cache shared by all sequences
  uint32_t type_k = 1;      // ggml type ids (f16)
  uint32_t type_v = 1;
  int64_t n_ubatch = 512;  // -ub as given (clamped by LayoutContext)
  int64_t n_batch = 2048;  // -b as given
  bool flash_attn = true;  // llama.cpp's -fa auto enables it where supported (CPU, CUDA)
  bool swa_full = false;
  ReserveOutputs reserve_outputs = ReserveOutputs::kAllTokens;
};

/// How llama.cpp sizes its context for ContextParams (src/llama-context.cpp).
struct ContextLayout {
  int64_t n_seq = 1;      // n_seq_max
  int64_t n_stream = 1;   // KV streams: 1 when unified or one sequence, else n_seq
  int64_t n_ctx_seq = 0;  // cells per stream (cparams.n_ctx_seq)
  int64_t n_ctx = 0;      // cells in all streams (cparams.n_ctx)
  int64_t n_batch = 0;    // after clamping to the context
  int64_t n_ubatch = 0;   // after clamping to the batch
  /// The worst-case graph llama.cpp reserves its compute buffers for
  /// (llama_context constructor: n_tokens = min(n_ctx, n_ubatch) rounded up to
  /// a multiple of n_seqs, n_seqs =
  /// n_seq_max in the installed engine (with -kvu too: llama-server logs
  /// "n_seqs = 4" for -np 4 -kvu), n_outputs as ReserveOutputs says).
  int64_t reserve_tokens = 0;
  int64_t reserve_seqs = 1;
  int64_t reserve_outputs = 0;
  bool unified = true;
  /// Cells per stream of a sliding-window / chunked layer with `window`.
  int64_t SwaCells(int64_t window, bool swa_full) const;
};

/// llama.cpp's limit on parallel sequences (LLAMA_MAX_SEQ).
inline constexpr int kMaxSequences = 256;

/// Validates and lays out a context. Errors (kInvalidArgument) name the value
/// and the accepted range: n_ctx < 1 or beyond 2^32, n_seq outside 1..256,
/// fewer cells than sequences, a zero batch.
Result<ContextLayout> LayoutContext(const ContextParams& cp);

struct LayerContext {
  int layer = 0;
  int64_t cells = 0;  // KV cells for this layer in all streams (0 for recurrent)
  int64_t k_bytes = 0;
  int64_t v_bytes = 0;
  int64_t state_bytes = 0;  // recurrent state (all sequences)
};

struct ContextMemory {
  ContextLayout layout;
  int64_t n_ctx_padded = 0;  // = layout.n_ctx
  std::vector<LayerContext> layers;
  int64_t kv_bytes = 0;          // K + V, all layers
  int64_t kv_growing_bytes = 0;  // part that grows with context (full / MLA layers)
  int64_t state_bytes = 0;       // recurrent state, all layers and sequences
  int64_t total() const { return kv_bytes + state_bytes; }
};

/// KV cache and recurrent state for `cp`. Errors: an invalid context
/// (LayoutContext) or sizes that overflow 64 bits.
Result<ContextMemory> ComputeContextMemory(const ModelArch& arch, const ContextParams& cp);

/// KV bytes per token of context for the layers whose cache grows with context.
int64_t KvBytesPerToken(const ModelArch& arch, uint32_t type_k = 1, uint32_t type_v = 1);

}  // namespace moetune
