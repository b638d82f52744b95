#pragma once
/// The shape of a synthetic model for `moetune synth`: presets for the MoE
/// models of shared/docs/models.md, Hugging Face config.json parsing, and
/// scaling a real shape down to a tiny one that keeps the layer pattern.
///
/// Field meanings follow llama.cpp's llama_hparams (src/llama-hparams.h) and
/// the GGUF keys written for them are listed in docs/architectures.md.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

struct SynthSpec {
  std::string arch;        // llama.cpp general.architecture ("qwen3moe", "gpt-oss", ...)
  std::string model_name;  // general.name
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_ff = 0;        // dense FFN width (dense models and dense layers of MoE models)
  int64_t n_ff_exp = 0;    // one routed expert's FFN width
  int64_t n_ff_shexp = 0;  // the shared expert FFN width (all shared experts together)
  int64_t n_expert = 0;    // 0 = dense model
  int64_t n_expert_used = 0;
  int64_t n_expert_shared = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // key/query head size (n_embd_head_k)
  int64_t n_rot = 0;     // rotary dimensions (rope.dimension_count)
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t sliding_window = 0;           // gpt-oss: SWA window, every other layer
  int64_t full_attention_interval = 0;  // qwen35moe/qwen3next: layer i is full iff (i+1) % k == 0
  int64_t leading_dense = 0;            // first_k_dense_replace (deepseek2, glm4moe)
  // Gated DeltaNet (qwen35moe, qwen3next): ssm.* keys of llama.cpp.
  int64_t ssm_conv_kernel = 0;  // linear_conv_kernel_dim
  int64_t ssm_state = 0;        // linear_key_head_dim (= value head dim in these models)
  int64_t ssm_groups = 0;       // linear_num_key_heads
  int64_t ssm_dt_rank = 0;      // linear_num_value_heads
  // Multi-head latent attention (deepseek2).
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_rope_dim = 0;
  int64_t qk_nope_dim = 0;
  int64_t v_head_dim = 0;
  float rope_theta = 10000.0f;
  float rms_eps = 1e-6f;

  bool moe() const { return n_expert > 0; }
  /// ssm.inner_size: value heads x value head size.
  int64_t ssm_inner() const { return ssm_dt_rank * ssm_state; }
  /// True when layer `il` is a Gated DeltaNet (recurrent) layer.
  bool IsRecurrentLayer(int64_t il) const {
    return full_attention_interval > 0 && (il + 1) % full_attention_interval != 0;
  }
  /// True when layer `il` has routed experts.
  bool IsMoeLayer(int64_t il) const { return moe() && il >= leading_dense; }
};

/// Names of the built-in presets (models.md), in a stable order.
std::vector<std::string> SynthPresetNames();

/// The real (full-scale) shape of a preset. kNotFound names the valid presets.
Result<SynthSpec> SynthPreset(std::string_view name);

/// Reads a Hugging Face config.json (already parsed). Maps model_type to the
/// llama.cpp architecture; kUnsupported for unknown model types, kFormat naming
/// the missing key otherwise. A "text_config" object (Qwen3.5, Llama 4) is merged in.
Result<SynthSpec> SynthSpecFromHfConfig(const nlohmann::json& config);

/// How far to shrink a real shape.
struct SynthScale {
  enum class Kind { kTiny, kSmall, kFactor } kind = Kind::kTiny;
  double factor = 1.0;  // for kFactor: widths are multiplied by it (1.0 = full)
};

/// Parses "tiny", "small", "full" or a factor in (0, 1] such as "0.25".
Result<SynthScale> ParseSynthScale(std::string_view text);

/// Applies a scale. tiny: 8 layers (keeping the dense/linear/SWA patterns),
/// width 256, <= 8 experts, vocab 1024, a few MB. small: 16 layers, width 1024,
/// <= 32 experts, vocab 8192. factor: widths x factor rounded up to 256, layers,
/// heads and experts kept.
SynthSpec ScaleSynthSpec(const SynthSpec& spec, const SynthScale& scale);

/// Ranges of a synthetic shape (ValidateSynthSpec). Generous against every
/// published model, small enough that no tensor size or sum of sizes computed
/// from them overflows 64 bits. Layers: model/arch.h kMaxLayers (what the
/// reader accepts).
inline constexpr int64_t kMaxSynthWidth = int64_t{1} << 20;  // hidden, FFN widths, LoRA ranks
inline constexpr int64_t kMaxSynthHeads = 4096;              // attention and linear heads
inline constexpr int64_t kMaxSynthHeadDim = 4096;            // head, rotary, state sizes
inline constexpr int64_t kMaxSynthExperts = 4096;
inline constexpr int64_t kMaxSynthVocab = int64_t{1} << 22;
/// GGUF stores the training context and the sliding window as 32-bit counts.
inline constexpr int64_t kMaxTrainContext = 4294967295;

/// Checks a spec: every field within its range, and consistency (head counts
/// divide, patterns fit the layer count, used experts <= experts).
Status ValidateSynthSpec(const SynthSpec& spec);

}  // namespace moetune
