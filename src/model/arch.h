#pragma once
/// Architecture knowledge: which layer each tensor belongs to and what role it
/// plays, what kind each layer is (full attention, sliding window, chunked,
/// linear/recurrent, MLA; dense or MoE), and the hyperparameters that size the
/// KV cache and the recurrent state.
///
/// Facts mirror llama.cpp's src/llama-model.cpp (load_hparams) and
/// src/llama-hparams.cpp; each is cited where it is used. Unknown
/// architectures are still analysed from tensor names and shapes, with a warning.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "util/result.h"

namespace moetune {

/// What a tensor is for. Placement cares about the routed experts (what
/// --n-cpu-moe moves) versus everything else in a layer.
enum class TensorRole {
  kTokenEmbedding,
  kOutput,         // the LM head (output.weight; absent = tied to token_embd)
  kNorm,           // every normalisation weight, incl. output_norm
  kAttention,      // q/k/v/o, fused qkv, biases, sinks, MLA pieces
  kRouter,         // ffn_gate_inp (+ exp_probs_b)
  kRoutedExperts,  // ffn_{gate,up,down,gate_up}_exps (+ their biases)
  kSharedExperts,  // *_shexp
  kDenseFfn,       // plain ffn_{gate,up,down}
  kRecurrent,      // ssm_* and the linear-attention projections of recurrent layers
  kOther,          // MTP/NextN heads, rope factors, unknown names
};
inline constexpr int kTensorRoleCount = 10;

/// The most layers (block_count) a model may have: more is refused as
/// implausible (the largest published models have about 130), and `synth`
/// writes no model the reader would refuse.
inline constexpr int64_t kMaxLayers = 100000;
const char* TensorRoleName(TensorRole role);

enum class AttentionKind {
  kFull,           // KV grows with context
  kSlidingWindow,  // KV capped at window (+ ubatch)
  kChunked,        // llama4 chunked attention, capped like SWA
  kRecurrent,      // linear attention / SSM: fixed-size state per sequence
  kMla,            // multi-head latent attention (compressed KV, grows with context)
  kNone,           // no attention cache (e.g. MTP layers excluded from KV)
};
const char* AttentionKindName(AttentionKind kind);

struct LayerInfo {
  int index = 0;
  AttentionKind attention = AttentionKind::kFull;
  bool moe = false;     // has routed experts
  bool has_kv = true;   // llama_hparams::has_kv
  uint32_t window = 0;  // sliding window / chunk size when capped
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t n_embd_k_gqa = 0;  // K values per token (n_embd_head_k * n_head_kv)
  uint32_t n_embd_v_gqa = 0;  // V values per token; 0 when V shares K (MLA)
};

/// The hyperparameters memory planning needs, read from GGUF metadata with
/// fallbacks from tensor shapes.
struct Hparams {
  std::string arch;
  std::string name;  // general.name
  uint32_t n_layer = 0;
  uint32_t n_embd = 0;
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_expert_shared = 0;
  uint32_t n_ff_exp = 0;
  uint32_t n_ff = 0;         // dense FFN width (largest layer)
  bool expert_bias = false;  // routed experts carry biases (gpt-oss)
  uint32_t n_swa = 0;
  uint32_t n_embd_head_k = 0;
  uint32_t n_embd_head_v = 0;
  uint32_t full_attention_interval = 0;
  uint32_t leading_dense = 0;
  uint32_t nextn_layers = 0;
  // recurrent (Mamba-style / Gated DeltaNet) state sizes
  uint32_t ssm_d_conv = 0, ssm_d_inner = 0, ssm_d_state = 0, ssm_n_group = 0;
  // MLA
  uint32_t kv_lora_rank = 0, n_rot = 0;

  /// Values per recurrent layer and sequence, as f32 (llama_hparams::n_embd_r / n_embd_s).
  uint64_t n_embd_r() const;
  uint64_t n_embd_s() const;
};

struct TensorClass {
  int layer = -1;  // -1 for tensors outside blk.N
  TensorRole role = TensorRole::kOther;
};

/// Everything architecture-specific moetune knows about one model.
struct ModelArch {
  Hparams hp;
  std::vector<LayerInfo> layers;
  std::vector<TensorClass> tensors;  // parallel to GgufModel::tensors
  std::vector<std::string> warnings;
  bool known_arch = true;
  bool is_moe() const { return hp.n_expert > 0; }
};

/// Architectures with explicit support (others work from tensor names).
const std::vector<std::string>& KnownArchitectures();

/// Classifies a tensor name (layer index + role), given whether its layer is recurrent.
TensorClass ClassifyTensor(const std::string& name, bool recurrent_layer);

/// Analyses a model header. Fails only when the header is unusable for
/// planning (no layers, no architecture and no blk.N tensors).
Result<ModelArch> AnalyzeArchitecture(const GgufModel& model);

}  // namespace moetune
