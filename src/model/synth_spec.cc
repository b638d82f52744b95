#include "model/synth_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "model/arch.h"
#include "util/checked.h"

namespace moetune {
namespace {

using json = nlohmann::json;

// Shapes from each model's config.json (see shared/docs/models.md).
SynthSpec Qwen3Moe() {
  SynthSpec s;
  s.arch = "qwen3moe";
  s.model_name = "Qwen3-30B-A3B (synthetic)";
  s.n_layer = 48, s.n_embd = 2048, s.n_ff = 6144, s.n_ff_exp = 768;
  s.n_expert = 128, s.n_expert_used = 8;
  s.n_head = 32, s.n_head_kv = 4, s.head_dim = 128, s.n_rot = 128;
  s.n_vocab = 151936, s.n_ctx_train = 40960, s.rope_theta = 1e6f, s.rms_eps = 1e-6f;
  return s;
}

// Qwen3-Next and Qwen3.5 MoE share the Gated DeltaNet geometry: 16 key heads and
// 32 value heads of 128, conv kernel 4, full attention every 4th layer with a
// 25% partial rotary embedding of 256-wide heads.
SynthSpec HybridQwen(std::string arch, std::string name, int64_t layers, int64_t experts,
                     int64_t used, int64_t vocab) {
  SynthSpec s;
  s.arch = std::move(arch);
  s.model_name = std::move(name);
  s.n_layer = layers, s.n_embd = 2048, s.n_ff = 5120, s.n_ff_exp = 512, s.n_ff_shexp = 512;
  s.n_expert = experts, s.n_expert_used = used, s.n_expert_shared = 1;
  s.n_head = 16, s.n_head_kv = 2, s.head_dim = 256, s.n_rot = 64;
  s.n_vocab = vocab, s.n_ctx_train = 262144, s.rope_theta = 1e7f, s.rms_eps = 1e-6f;
  s.full_attention_interval = 4;
  s.ssm_conv_kernel = 4, s.ssm_state = 128, s.ssm_groups = 16, s.ssm_dt_rank = 32;
  return s;
}

SynthSpec GptOss(std::string name, int64_t layers, int64_t experts) {
  SynthSpec s;
  s.arch = "gpt-oss";
  s.model_name = std::move(name);
  s.n_layer = layers, s.n_embd = 2880, s.n_ff = 2880, s.n_ff_exp = 2880;
  s.n_expert = experts, s.n_expert_used = 4;
  s.n_head = 64, s.n_head_kv = 8, s.head_dim = 64, s.n_rot = 64;
  s.n_vocab = 201088, s.n_ctx_train = 131072, s.rope_theta = 150000.0f, s.rms_eps = 1e-5f;
  s.sliding_window = 128;
  return s;
}

SynthSpec Glm4Moe() {
  SynthSpec s;
  s.arch = "glm4moe";
  s.model_name = "GLM-4.5-Air (synthetic, no MTP layer)";
  s.n_layer = 46, s.n_embd = 4096, s.n_ff = 10944, s.n_ff_exp = 1408, s.n_ff_shexp = 1408;
  s.n_expert = 128, s.n_expert_used = 8, s.n_expert_shared = 1, s.leading_dense = 1;
  s.n_head = 96, s.n_head_kv = 8, s.head_dim = 128, s.n_rot = 64;
  s.n_vocab = 151552, s.n_ctx_train = 131072, s.rope_theta = 1e6f, s.rms_eps = 1e-5f;
  return s;
}

SynthSpec Deepseek2() {
  SynthSpec s;
  s.arch = "deepseek2";
  s.model_name = "DeepSeek-V3 (synthetic, no MTP layer)";
  s.n_layer = 61, s.n_embd = 7168, s.n_ff = 18432, s.n_ff_exp = 2048, s.n_ff_shexp = 2048;
  s.n_expert = 256, s.n_expert_used = 8, s.n_expert_shared = 1, s.leading_dense = 3;
  s.n_head = 128, s.n_head_kv = 128, s.head_dim = 192, s.n_rot = 64;
  s.q_lora_rank = 1536, s.kv_lora_rank = 512, s.qk_rope_dim = 64, s.qk_nope_dim = 128,
  s.v_head_dim = 128;
  s.n_vocab = 129280, s.n_ctx_train = 163840, s.rope_theta = 10000.0f, s.rms_eps = 1e-6f;
  return s;
}

SynthSpec Mixtral() {
  SynthSpec s;
  s.arch = "llama";
  s.model_name = "Mixtral-8x7B (synthetic)";
  s.n_layer = 32, s.n_embd = 4096, s.n_ff = 14336, s.n_ff_exp = 14336;
  s.n_expert = 8, s.n_expert_used = 2;
  s.n_head = 32, s.n_head_kv = 8, s.head_dim = 128, s.n_rot = 128;
  s.n_vocab = 32000, s.n_ctx_train = 32768, s.rope_theta = 1e6f, s.rms_eps = 1e-5f;
  return s;
}

SynthSpec Llama4() {
  SynthSpec s;
  s.arch = "llama4";
  s.model_name = "Llama-4-Scout-17B-16E (synthetic)";
  s.n_layer = 48, s.n_embd = 5120, s.n_ff = 16384, s.n_ff_exp = 8192, s.n_ff_shexp = 8192;
  s.n_expert = 16, s.n_expert_used = 1, s.n_expert_shared = 1;
  s.n_head = 40, s.n_head_kv = 8, s.head_dim = 128, s.n_rot = 128;
  s.n_vocab = 202048, s.n_ctx_train = 262144, s.rope_theta = 500000.0f, s.rms_eps = 1e-5f;
  return s;
}

SynthSpec Dense(std::string arch, std::string name, int64_t layers, int64_t embd, int64_t ff,
                int64_t heads, int64_t kv, int64_t hd, int64_t vocab, float theta) {
  SynthSpec s;
  s.arch = std::move(arch);
  s.model_name = std::move(name);
  s.n_layer = layers, s.n_embd = embd, s.n_ff = ff;
  s.n_head = heads, s.n_head_kv = kv, s.head_dim = hd, s.n_rot = hd;
  s.n_vocab = vocab, s.n_ctx_train = 32768, s.rope_theta = theta, s.rms_eps = 1e-6f;
  return s;
}

int64_t RoundUp(double x, int64_t m) {
  const auto v = static_cast<int64_t>(std::ceil(x / static_cast<double>(m) - 1e-9));
  return std::max<int64_t>(1, v) * m;
}

}  // namespace

std::vector<std::string> SynthPresetNames() {
  return {"qwen3moe",  "qwen35moe", "qwen3next", "gpt-oss-20b", "gpt-oss-120b", "glm4moe",
          "deepseek2", "mixtral",   "llama4",    "llama",       "qwen2",        "qwen3"};
}

Result<SynthSpec> SynthPreset(std::string_view name) {
  if (name == "qwen3moe") return Qwen3Moe();
  if (name == "qwen35moe")
    return HybridQwen("qwen35moe", "Qwen3.5-35B-A3B (synthetic)", 40, 256, 8, 248320);
  if (name == "qwen3next")
    return HybridQwen("qwen3next", "Qwen3-Next-80B-A3B (synthetic)", 48, 512, 10, 151936);
  if (name == "gpt-oss-20b") return GptOss("gpt-oss-20b (synthetic)", 24, 32);
  if (name == "gpt-oss-120b") return GptOss("gpt-oss-120b (synthetic)", 36, 128);
  if (name == "gpt-oss") return GptOss("gpt-oss-20b (synthetic)", 24, 32);
  if (name == "glm4moe") return Glm4Moe();
  if (name == "deepseek2") return Deepseek2();
  if (name == "mixtral") return Mixtral();
  if (name == "llama4") return Llama4();
  // Small dense models: Llama-3.2-1B, Qwen2.5-0.5B, Qwen3-0.6B.
  if (name == "llama")
    return Dense("llama", "Llama-3.2-1B (synthetic)", 16, 2048, 8192, 32, 8, 64, 128256, 500000.0f);
  if (name == "qwen2")
    return Dense("qwen2", "Qwen2.5-0.5B (synthetic)", 24, 896, 4864, 14, 2, 64, 151936, 1e6f);
  if (name == "qwen3")
    return Dense("qwen3", "Qwen3-0.6B (synthetic)", 28, 1024, 3072, 16, 8, 128, 151936, 1e6f);
  std::string known;
  for (const auto& n : SynthPresetNames()) known += (known.empty() ? "" : ", ") + n;
  return Error(ErrorKind::kNotFound, fmt::format("unknown preset '{}'; presets: {}", name, known));
}

Result<SynthScale> ParseSynthScale(std::string_view text) {
  SynthScale s;
  if (text == "tiny") return s;
  if (text == "small") {
    s.kind = SynthScale::Kind::kSmall;
    return s;
  }
  s.kind = SynthScale::Kind::kFactor;
  if (text == "full") return s;
  double f = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(f > 0.0) || f > 1.0) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("bad --scale '{}'; use tiny, small, full or a factor in (0, 1]", text));
  }
  s.factor = f;
  return s;
}

SynthSpec ScaleSynthSpec(const SynthSpec& in, const SynthScale& scale) {
  SynthSpec s = in;
  if (scale.kind == SynthScale::Kind::kFactor) {
    if (scale.factor >= 1.0) return s;
    const double f = scale.factor;
    s.n_embd = RoundUp(static_cast<double>(in.n_embd) * f, 256);
    s.n_ff = RoundUp(static_cast<double>(in.n_ff) * f, 256);
    if (in.n_ff_exp > 0) s.n_ff_exp = RoundUp(static_cast<double>(in.n_ff_exp) * f, 256);
    if (in.n_ff_shexp > 0) s.n_ff_shexp = RoundUp(static_cast<double>(in.n_ff_shexp) * f, 256);
    s.n_vocab = std::max<int64_t>(512, RoundUp(static_cast<double>(in.n_vocab) * f, 64));
    return s;
  }
  const bool tiny = scale.kind == SynthScale::Kind::kTiny;
  s.model_name = in.model_name + (tiny ? " tiny" : " small");
  // Layers: enough to keep every pattern (one leading dense layer, two periods
  // of the linear/full or SWA/full alternation) and to make placement matter.
  const int64_t max_layers = tiny ? 8 : 16;
  s.n_layer = std::min(in.n_layer, max_layers);
  if (in.full_attention_interval > 0) {
    s.n_layer =
        std::max(s.n_layer / in.full_attention_interval, int64_t{1}) * in.full_attention_interval;
  }
  s.leading_dense = std::min<int64_t>(in.leading_dense, 1);
  s.n_embd = tiny ? 256 : 1024;
  // Heads: at most 2 (4) KV heads with a GQA group of at most 2 (4), head size <= 128.
  const int64_t max_kv = tiny ? 2 : 4;
  const int64_t group = in.n_head_kv > 0 ? std::max<int64_t>(1, in.n_head / in.n_head_kv) : 1;
  s.n_head_kv = std::min(in.n_head_kv, max_kv);
  s.n_head = s.n_head_kv * std::min(group, max_kv);
  if (in.arch == "deepseek2") {
    s.n_head = tiny ? 4 : 16;
    s.n_head_kv = s.n_head;
    if (in.q_lora_rank > 0) s.q_lora_rank = tiny ? 256 : 512;
    s.kv_lora_rank = std::min<int64_t>(in.kv_lora_rank, 512);
  } else if (in.head_dim * in.n_head == in.n_embd) {
    // Models whose heads span the hidden size keep that relation: llama.cpp
    // creates qwen2's attn_q as [n_embd, n_embd] (src/llama-model.cpp), so a
    // narrower Q projection is rejected ("attn_q has wrong shape").
    s.head_dim = s.n_embd / s.n_head;
    s.n_rot = std::max<int64_t>(2, in.n_rot * s.head_dim / in.head_dim / 2 * 2);
  } else if (in.head_dim > 128) {
    s.head_dim = 128;
    s.n_rot = std::max<int64_t>(2, in.n_rot * 128 / in.head_dim);
  }
  s.n_ff = tiny ? 512 : 2816;
  if (in.n_ff_exp > 0) s.n_ff_exp = tiny ? 256 : 512;
  if (in.n_ff_shexp > 0) s.n_ff_shexp = s.n_ff_exp * std::max<int64_t>(1, in.n_expert_shared);
  // gpt-oss and Mixtral (llama) size their experts with feed_forward_length.
  if (in.arch == "gpt-oss" || (in.arch == "llama" && in.moe())) s.n_ff = s.n_ff_exp;
  if (in.n_expert > 0) {
    s.n_expert = std::min<int64_t>(in.n_expert, tiny ? 8 : 32);
    s.n_expert_used = std::min(in.n_expert_used, std::max<int64_t>(1, s.n_expert / 2));
  }
  if (in.ssm_groups > 0) {
    const int64_t ratio = std::max<int64_t>(1, in.ssm_dt_rank / in.ssm_groups);
    s.ssm_groups = std::min<int64_t>(in.ssm_groups, tiny ? 2 : 4);
    s.ssm_dt_rank = s.ssm_groups * ratio;
    s.ssm_state = std::min<int64_t>(in.ssm_state, 128);
  }
  s.n_vocab = std::min<int64_t>(in.n_vocab, tiny ? 1024 : 8192);
  s.n_ctx_train = std::min<int64_t>(in.n_ctx_train, tiny ? 4096 : 16384);
  return s;
}

namespace {

// The first field of `s` outside its range, said; nullopt when none is.
std::optional<std::string> FieldOutOfRange(const SynthSpec& s) {
  struct Field {
    const char* name;
    int64_t value;
    int64_t min;
    int64_t max;
  };
  const Field fields[] = {
      {"layers", s.n_layer, 1, kMaxLayers},
      {"hidden size", s.n_embd, 1, kMaxSynthWidth},
      {"FFN width", s.n_ff, 0, kMaxSynthWidth},
      {"expert FFN width", s.n_ff_exp, 0, kMaxSynthWidth},
      {"shared expert FFN width", s.n_ff_shexp, 0, kMaxSynthWidth},
      {"experts", s.n_expert, 0, kMaxSynthExperts},
      {"experts used", s.n_expert_used, 0, kMaxSynthExperts},
      {"shared experts", s.n_expert_shared, 0, kMaxSynthExperts},
      {"attention heads", s.n_head, 1, kMaxSynthHeads},
      {"KV heads", s.n_head_kv, 1, kMaxSynthHeads},
      {"head size", s.head_dim, 1, kMaxSynthHeadDim},
      {"rotary dims", s.n_rot, 0, kMaxSynthHeadDim},
      {"vocab", s.n_vocab, 0, kMaxSynthVocab},
      {"training context", s.n_ctx_train, 1, kMaxTrainContext},
      {"sliding window", s.sliding_window, 0, kMaxTrainContext},
      {"full-attention interval", s.full_attention_interval, 0, s.n_layer},
      {"leading dense layers", s.leading_dense, 0, s.n_layer},
      {"conv kernel", s.ssm_conv_kernel, 0, kMaxSynthHeadDim},
      {"state size", s.ssm_state, 0, kMaxSynthHeadDim},
      {"linear key heads", s.ssm_groups, 0, kMaxSynthHeads},
      {"linear value heads", s.ssm_dt_rank, 0, kMaxSynthHeads},
      {"q_lora_rank", s.q_lora_rank, 0, kMaxSynthWidth},
      {"kv_lora_rank", s.kv_lora_rank, 0, kMaxSynthWidth},
      {"qk_rope_head_dim", s.qk_rope_dim, 0, kMaxSynthHeadDim},
      {"qk_nope_head_dim", s.qk_nope_dim, 0, kMaxSynthHeadDim},
      {"v_head_dim", s.v_head_dim, 0, kMaxSynthHeadDim},
  };
  for (const Field& f : fields) {
    if (f.value < f.min || f.value > f.max) {
      return fmt::format("{} {} is outside {} to {}", f.name, f.value, f.min, f.max);
    }
  }
  return std::nullopt;
}

}  // namespace

Status ValidateSynthSpec(const SynthSpec& s) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorKind::kInvalidArgument, fmt::format("invalid {} shape: {}", s.arch, what));
  };
  // Every field within its range first, so that the products below (and the
  // tensor sizes the writer computes from them) cannot overflow.
  if (auto why = FieldOutOfRange(s)) return bad(*why);
  if (!(std::isfinite(s.rope_theta) && s.rope_theta > 0) ||
      !(std::isfinite(s.rms_eps) && s.rms_eps > 0)) {
    return bad(
        fmt::format("rope theta {} and RMS epsilon {} must be positive", s.rope_theta, s.rms_eps));
  }
  if (s.n_head % s.n_head_kv != 0) {
    return bad(fmt::format("{} heads are not a multiple of {} KV heads", s.n_head, s.n_head_kv));
  }
  if (s.n_rot <= 0 || s.n_rot > s.head_dim || s.n_rot % 2 != 0) {
    return bad(fmt::format("rotary dims {} must be even and <= head size {}", s.n_rot, s.head_dim));
  }
  if (s.n_vocab < 300)
    return bad(fmt::format("vocab {} < 300 (the tokenizer needs 259 tokens)", s.n_vocab));
  if (s.moe() && (s.n_expert_used <= 0 || s.n_expert_used > s.n_expert || s.n_ff_exp <= 0)) {
    return bad(
        fmt::format("{} used of {} experts (width {})", s.n_expert_used, s.n_expert, s.n_ff_exp));
  }
  if (s.n_expert_shared > 0 && s.n_ff_shexp <= 0) return bad("shared experts without a width");
  // These architectures give every MoE layer a shared expert (llama.cpp creates
  // its ffn_*_shexp tensors unconditionally, src/llama-model.cpp load_tensors).
  const bool shared_always = s.arch == "qwen35moe" || s.arch == "qwen3next" || s.arch == "llama4" ||
                             s.arch == "glm4moe" || s.arch == "deepseek2";
  if (shared_always && s.moe() && s.n_ff_shexp <= 0) {
    return bad(
        "its MoE layers have a shared expert: give its width (shared_expert_intermediate_size "
        "or n_shared_experts)");
  }
  if (s.leading_dense >= s.n_layer && s.moe()) {
    return bad(fmt::format("{} leading dense layers leave no MoE layer of {}", s.leading_dense,
                           s.n_layer));
  }
  if ((s.leading_dense > 0 || !s.moe()) && s.n_ff <= 0) return bad("dense layers need a FFN width");
  const bool hybrid = s.arch == "qwen35moe" || s.arch == "qwen3next";
  if (hybrid && s.full_attention_interval <= 0) {
    return bad("a hybrid model needs a full-attention interval of at least 1");
  }
  if (s.full_attention_interval > 0) {
    if (s.ssm_groups <= 0 || s.ssm_dt_rank % s.ssm_groups != 0 || s.ssm_state <= 0 ||
        s.ssm_conv_kernel <= 0) {
      return bad(
          "linear attention needs conv kernel, state size, and value heads a multiple of key "
          "heads");
    }
  }
  if (s.arch == "deepseek2" && (s.kv_lora_rank <= 0 || s.qk_rope_dim <= 0 || s.v_head_dim <= 0)) {
    return bad("MLA needs kv_lora_rank, qk_rope_head_dim and v_head_dim");
  }
  if (s.arch == "gpt-oss" && s.sliding_window <= 0) return bad("gpt-oss needs a sliding window");
  return OkStatus();
}

}  // namespace moetune
