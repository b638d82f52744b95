#include "model/synth_tensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

// Builds one architecture's list; each helper mirrors a block of
// llama_model::load_tensors (src/llama-model.cpp upstream).
class ListBuilder {
 public:
  explicit ListBuilder(const SynthSpec& s) : s_(s) {}

  void Add(std::string name, std::vector<int64_t> ne, SynthGroup g,
           SynthInit init = SynthInit::kNormal, float value = 0.02f) {
    out_.push_back({std::move(name), std::move(ne), g, init, value});
  }
  void Layer(int il, const char* base, std::vector<int64_t> ne, SynthGroup g,
             const char* suffix = "weight", SynthInit init = SynthInit::kNormal,
             float value = 0.02f) {
    Add(fmt::format("blk.{}.{}.{}", il, base, suffix), std::move(ne), g, init, value);
  }
  void Norm(int il, const char* base, int64_t n) {
    Layer(il, base, {n}, SynthGroup::kNorm, "weight", SynthInit::kConst, 1.0f);
  }
  void Bias(int il, const char* base, std::vector<int64_t> ne) {
    Layer(il, base, std::move(ne), SynthGroup::kSmallF32, "bias", SynthInit::kConst, 0.0f);
  }

  void Head() { Add("token_embd.weight", {s_.n_embd, s_.n_vocab}, SynthGroup::kEmbedding); }
  void Tail() {
    Add("output_norm.weight", {s_.n_embd}, SynthGroup::kNorm, SynthInit::kConst, 1.0f);
    Add("output.weight", {s_.n_embd, s_.n_vocab}, SynthGroup::kOutput);
  }

  // Standard grouped-query attention; `q_mult` 2 = query and output gate fused (qwen3next/3.5).
  void Attention(int il, bool bias, bool qk_norm, int64_t q_mult = 1) {
    const int64_t q = s_.n_head * s_.head_dim, kv = s_.n_head_kv * s_.head_dim;
    Layer(il, "attn_q", {s_.n_embd, q * q_mult}, SynthGroup::kAttention);
    Layer(il, "attn_k", {s_.n_embd, kv}, SynthGroup::kAttention);
    Layer(il, "attn_v", {s_.n_embd, kv}, SynthGroup::kAttention);
    Layer(il, "attn_output", {q, s_.n_embd}, SynthGroup::kAttention);
    if (bias) {
      Bias(il, "attn_q", {q});
      Bias(il, "attn_k", {kv});
      Bias(il, "attn_v", {kv});
    }
    if (qk_norm) {
      Norm(il, "attn_q_norm", s_.head_dim);
      Norm(il, "attn_k_norm", s_.head_dim);
    }
  }

  // DeepSeek-V2/V3 multi-head latent attention, in the converter's current
  // layout with the absorbed attn_k_b / attn_v_b (key_length_mla set).
  void Mla(int il) {
    const int64_t qk = s_.qk_nope_dim + s_.qk_rope_dim;
    if (s_.q_lora_rank > 0) {
      Layer(il, "attn_q_a", {s_.n_embd, s_.q_lora_rank}, SynthGroup::kAttention);
      Norm(il, "attn_q_a_norm", s_.q_lora_rank);
      Layer(il, "attn_q_b", {s_.q_lora_rank, s_.n_head * qk}, SynthGroup::kAttention);
    } else {
      Layer(il, "attn_q", {s_.n_embd, s_.n_head * qk}, SynthGroup::kAttention);
    }
    Layer(il, "attn_kv_a_mqa", {s_.n_embd, s_.kv_lora_rank + s_.qk_rope_dim},
          SynthGroup::kAttention);
    Norm(il, "attn_kv_a_norm", s_.kv_lora_rank);
    Layer(il, "attn_k_b", {s_.qk_nope_dim, s_.kv_lora_rank, s_.n_head}, SynthGroup::kAttention);
    Layer(il, "attn_v_b", {s_.kv_lora_rank, s_.v_head_dim, s_.n_head}, SynthGroup::kAttention);
    Layer(il, "attn_output", {s_.n_head * s_.v_head_dim, s_.n_embd}, SynthGroup::kAttention);
  }

  // Gated DeltaNet linear attention. qwen3next fuses q/k/v/z into ssm_in and
  // beta/alpha into ssm_ba; qwen35moe keeps attn_qkv, attn_gate, ssm_beta, ssm_alpha.
  void DeltaNet(int il, bool qwen35) {
    const int64_t head = s_.ssm_state;
    const int64_t key_dim = head * s_.ssm_groups, value_dim = head * s_.ssm_dt_rank;
    const int64_t conv_dim = 2 * key_dim + value_dim;
    if (qwen35) {
      Layer(il, "attn_qkv", {s_.n_embd, conv_dim}, SynthGroup::kRecurrent);
      Layer(il, "attn_gate", {s_.n_embd, value_dim}, SynthGroup::kRecurrent);
      Layer(il, "ssm_beta", {s_.n_embd, s_.ssm_dt_rank}, SynthGroup::kRecurrent);
      Layer(il, "ssm_alpha", {s_.n_embd, s_.ssm_dt_rank}, SynthGroup::kRecurrent);
    } else {
      Layer(il, "ssm_in", {s_.n_embd, 2 * key_dim + 2 * value_dim}, SynthGroup::kRecurrent);
      Layer(il, "ssm_ba", {s_.n_embd, 2 * s_.ssm_dt_rank}, SynthGroup::kRecurrent);
    }
    Layer(il, "ssm_conv1d", {s_.ssm_conv_kernel, conv_dim}, SynthGroup::kSmallF32, "weight",
          SynthInit::kNormal, 0.2f);
    Bias(il, "ssm_dt", {s_.ssm_dt_rank});
    // ssm_a holds -exp(A_log) (the converter stores it so); -1 gives a mild decay.
    Add(fmt::format("blk.{}.ssm_a", il), {s_.ssm_dt_rank}, SynthGroup::kSmallF32, SynthInit::kConst,
        -1.0f);
    Norm(il, "ssm_norm", head);
    Layer(il, "ssm_out", {value_dim, s_.n_embd}, SynthGroup::kRecurrent);
  }

  void DenseFfn(int il, int64_t n_ff) {
    Layer(il, "ffn_gate", {s_.n_embd, n_ff}, SynthGroup::kDenseFfn);
    Layer(il, "ffn_down", {n_ff, s_.n_embd}, SynthGroup::kDenseFfn);
    Layer(il, "ffn_up", {s_.n_embd, n_ff}, SynthGroup::kDenseFfn);
  }

  void Experts(int il, bool bias = false) {
    const int64_t e = s_.n_expert, f = s_.n_ff_exp;
    Layer(il, "ffn_gate_inp", {s_.n_embd, e}, SynthGroup::kRouter);
    Layer(il, "ffn_gate_exps", {s_.n_embd, f, e}, SynthGroup::kExperts);
    Layer(il, "ffn_down_exps", {f, s_.n_embd, e}, SynthGroup::kExperts);
    Layer(il, "ffn_up_exps", {s_.n_embd, f, e}, SynthGroup::kExperts);
    if (bias) {
      Bias(il, "ffn_gate_inp", {e});
      Bias(il, "ffn_gate_exps", {f, e});
      Bias(il, "ffn_down_exps", {s_.n_embd, e});
      Bias(il, "ffn_up_exps", {f, e});
    }
  }

  void SharedExpert(int il, bool gate_inp) {
    if (gate_inp) {
      Layer(il, "ffn_gate_inp_shexp", {s_.n_embd}, SynthGroup::kSmallF32);
    }
    Layer(il, "ffn_gate_shexp", {s_.n_embd, s_.n_ff_shexp}, SynthGroup::kSharedExperts);
    Layer(il, "ffn_down_shexp", {s_.n_ff_shexp, s_.n_embd}, SynthGroup::kSharedExperts);
    Layer(il, "ffn_up_shexp", {s_.n_embd, s_.n_ff_shexp}, SynthGroup::kSharedExperts);
  }

  void ExpProbsBias(int il) {
    Layer(il, "exp_probs_b", {s_.n_expert}, SynthGroup::kSmallF32, "bias", SynthInit::kConst, 0.0f);
  }

  std::vector<SynthTensor> Take() { return std::move(out_); }

 private:
  const SynthSpec& s_;
  std::vector<SynthTensor> out_;
};

}  // namespace

Result<std::vector<SynthTensor>> SynthTensorList(const SynthSpec& s) {
  MOETUNE_TRY(ValidateSynthSpec(s));
  ListBuilder b(s);
  b.Head();
  const std::string& a = s.arch;
  const int n_layer = static_cast<int>(s.n_layer);
  // glm4moe and deepseek2: leading dense layers, then routed experts with a
  // selection bias and one shared expert.
  auto sigmoid_moe_or_dense = [&](int il) {
    if (s.IsMoeLayer(il)) {
      b.Experts(il);
      b.ExpProbsBias(il);
      b.SharedExpert(il, false);
    } else {
      b.DenseFfn(il, s.n_ff);
    }
  };
  for (int il = 0; il < n_layer; ++il) {
    b.Norm(il, "attn_norm", s.n_embd);
    if (a == "llama" || a == "qwen2" || a == "qwen3" || a == "qwen3moe" || a == "llama4") {
      b.Attention(il, a == "qwen2", a == "qwen3" || a == "qwen3moe");
      b.Norm(il, "ffn_norm", s.n_embd);
      if (s.IsMoeLayer(il)) {
        b.Experts(il);
        if (a == "llama4") b.SharedExpert(il, false);
      } else {
        b.DenseFfn(il, s.n_ff);
      }
    } else if (a == "qwen35moe" || a == "qwen3next") {
      if (s.IsRecurrentLayer(il)) {
        b.DeltaNet(il, a == "qwen35moe");
      } else {
        b.Attention(il, false, true, 2);
      }
      b.Norm(il, "post_attention_norm", s.n_embd);
      b.Experts(il);
      b.SharedExpert(il, true);
    } else if (a == "gpt-oss") {
      b.Attention(il, true, false);
      b.Bias(il, "attn_output", {s.n_embd});
      b.Layer(il, "attn_sinks", {s.n_head}, SynthGroup::kSmallF32, "weight", SynthInit::kConst,
              0.0f);
      b.Norm(il, "post_attention_norm", s.n_embd);
      b.Experts(il, true);
    } else if (a == "glm4moe") {
      b.Attention(il, true, false);
      b.Norm(il, "post_attention_norm", s.n_embd);
      sigmoid_moe_or_dense(il);
    } else if (a == "deepseek2") {
      b.Mla(il);
      b.Norm(il, "ffn_norm", s.n_embd);
      sigmoid_moe_or_dense(il);
    } else {
      return Error(ErrorKind::kUnsupported,
                   fmt::format("synth has no tensor list for architecture '{}'", a));
    }
  }
  b.Tail();
  std::vector<SynthTensor> tensors = b.Take();
  // Every size divides by ne[0] later: a zero or negative dimension is an error
  // here, whatever shape let it through.
  for (const auto& t : tensors) {
    for (int64_t d : t.ne) {
      if (d <= 0) {
        return Error(ErrorKind::kInvalidArgument,
                     fmt::format("invalid {} shape: tensor {} would have a dimension of {}", s.arch,
                                 t.name, d));
      }
    }
  }
  return tensors;
}

Result<SynthQuant> ParseSynthQuant(std::string_view text) {
  std::string t(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "f16") return SynthQuant::kF16;
  if (t == "q8_0") return SynthQuant::kQ8_0;
  if (t == "q6_k") return SynthQuant::kQ6_K;
  if (t == "q5_k_m") return SynthQuant::kQ5_K_M;
  if (t == "q5_k_s") return SynthQuant::kQ5_K_S;
  if (t == "q4_k_m") return SynthQuant::kQ4_K_M;
  if (t == "q4_k" || t == "q4_k_s") return SynthQuant::kQ4_K;
  if (t == "mxfp4" || t == "mxfp4_moe") return SynthQuant::kMxfp4;
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("unknown --quant '{}'; use f16, q8_0, q6_k, q5_k_m, q5_k_s, q4_k_m, "
                           "q4_k_s or mxfp4",
                           text));
}

const char* SynthQuantName(SynthQuant q) {
  switch (q) {
    case SynthQuant::kF16:
      return "f16";
    case SynthQuant::kQ8_0:
      return "q8_0";
    case SynthQuant::kQ6_K:
      return "q6_k";
    case SynthQuant::kQ4_K:
      return "q4_k_s";
    case SynthQuant::kQ4_K_M:
      return "q4_k_m";
    case SynthQuant::kQ5_K_S:
      return "q5_k_s";
    case SynthQuant::kQ5_K_M:
      return "q5_k_m";
    case SynthQuant::kMxfp4:
      return "mxfp4";
  }
  return "?";
}

LlamaFtype SynthFtype(SynthQuant quant) {
  switch (quant) {
    case SynthQuant::kF16:
      return LlamaFtype::kF16;
    case SynthQuant::kQ8_0:
      return LlamaFtype::kQ8_0;
    case SynthQuant::kQ6_K:
      return LlamaFtype::kQ6_K;
    case SynthQuant::kQ4_K:
      return LlamaFtype::kQ4_K_S;
    case SynthQuant::kQ4_K_M:
      return LlamaFtype::kQ4_K_M;
    case SynthQuant::kQ5_K_S:
      return LlamaFtype::kQ5_K_S;
    case SynthQuant::kQ5_K_M:
      return LlamaFtype::kQ5_K_M;
    case SynthQuant::kMxfp4:
      return LlamaFtype::kMxfp4Moe;
  }
  return LlamaFtype::kF16;
}

uint32_t SynthSourceType(const SynthTensor& t) {
  if (t.group == SynthGroup::kNorm || t.group == SynthGroup::kSmallF32 ||
      t.group == SynthGroup::kRouter || t.ne.size() < 2) {
    return ggml_type::kF32;
  }
  return ggml_type::kF16;
}

std::vector<uint32_t> SynthTensorTypes(const SynthSpec& spec,
                                       const std::vector<SynthTensor>& tensors, SynthQuant quant) {
  QuantRecipeModel model;
  model.arch = spec.arch;
  model.n_layer = spec.n_layer;
  model.n_expert = spec.n_expert;
  model.type_70b =
      IsLlamaType70B(spec.arch, spec.n_layer, spec.n_expert, spec.n_head, spec.n_head_kv);
  std::vector<QuantRecipeTensor> in;
  in.reserve(tensors.size());
  for (const auto& t : tensors) in.push_back({t.name, t.ne, SynthSourceType(t)});
  return QuantRecipeTypes(model, SynthFtype(quant), in);
}

uint32_t SynthFileType(SynthQuant quant) { return static_cast<uint32_t>(SynthFtype(quant)); }

}  // namespace moetune
