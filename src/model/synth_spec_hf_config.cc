// moetune synth --from-config: a synthetic model's shape from a Hugging Face
// config.json (model/synth_spec.h SynthSpecFromHfConfig). Untrusted input: every
// key is checked for its type and range, and the shape is validated whole.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "model/synth_spec.h"
#include "util/checked.h"

namespace moetune {
namespace {

using json = nlohmann::json;

// --- config.json helpers ---------------------------------------------------

const json* Find(const json& c, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = c.find(k);
    if (it != c.end() && !it->is_null()) return &*it;
  }
  return nullptr;
}

Result<int64_t> GetInt(const json& c, std::initializer_list<const char*> keys) {
  const json* v = Find(c, keys);
  if (v == nullptr) {
    std::string names;
    for (const char* k : keys) names += std::string(names.empty() ? "" : " or ") + k;
    return Error(ErrorKind::kFormat, fmt::format("config.json lacks {}; add it", names));
  }
  // An unsigned value above INT64_MAX would wrap in get<int64_t>().
  if (!v->is_number_integer() || (v->is_number_unsigned() && v->get<uint64_t>() > INT64_MAX) ||
      v->get<int64_t>() < 0) {
    return Error(ErrorKind::kFormat,
                 fmt::format("config.json key '{}' must be a non-negative integer, is {}",
                             *keys.begin(), v->dump()));
  }
  return v->get<int64_t>();
}

// An optional key: `fallback` when absent; an error naming the key when it is
// not a non-negative integer (a negative length would wrap in the GGUF's u32).
Result<int64_t> GetIntOr(const json& c, std::initializer_list<const char*> keys, int64_t fallback) {
  if (Find(c, keys) == nullptr) return fallback;
  return GetInt(c, keys);
}

double GetFloatOr(const json& c, std::initializer_list<const char*> keys, double fallback) {
  const json* v = Find(c, keys);
  return v != nullptr && v->is_number() ? v->get<double>() : fallback;
}

// HF model_type -> llama.cpp arch (convert_hf_to_gguf.py's registrations).
Result<std::string> ArchForModelType(const std::string& mt) {
  static const std::vector<std::pair<std::string, std::string>> kMap = {
      {"qwen3_moe", "qwen3moe"},    {"qwen3_5_moe", "qwen35moe"}, {"qwen3_5_moe_text", "qwen35moe"},
      {"qwen3_next", "qwen3next"},  {"gpt_oss", "gpt-oss"},       {"glm4_moe", "glm4moe"},
      {"deepseek_v3", "deepseek2"}, {"deepseek_v2", "deepseek2"}, {"mixtral", "llama"},
      {"llama", "llama"},           {"mistral", "llama"},         {"llama4", "llama4"},
      {"llama4_text", "llama4"},    {"qwen2", "qwen2"},           {"qwen3", "qwen3"},
  };
  for (const auto& [k, v] : kMap) {
    if (k == mt) return v;
  }
  std::string known;
  for (const auto& [k, v] : kMap) known += (known.empty() ? "" : ", ") + k;
  return Error(
      ErrorKind::kUnsupported,
      fmt::format("config.json model_type '{}' is not supported by synth; known: {}", mt, known));
}

std::string ModelTypeFromArchitectures(const json& c) {
  const json* a = Find(c, {"architectures"});
  if (a == nullptr || !a->is_array() || a->empty() || !(*a)[0].is_string()) return "";
  std::string name = (*a)[0].get<std::string>();
  static const std::vector<std::pair<std::string, std::string>> kMap = {
      {"Qwen3MoeForCausalLM", "qwen3_moe"},
      {"Qwen3NextForCausalLM", "qwen3_next"},
      {"Qwen3_5MoeForConditionalGeneration", "qwen3_5_moe"},
      {"GptOssForCausalLM", "gpt_oss"},
      {"Glm4MoeForCausalLM", "glm4_moe"},
      {"DeepseekV3ForCausalLM", "deepseek_v3"},
      {"DeepseekV2ForCausalLM", "deepseek_v2"},
      {"MixtralForCausalLM", "mixtral"},
      {"LlamaForCausalLM", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"Llama4ForConditionalGeneration", "llama4"},
      {"Qwen2ForCausalLM", "qwen2"},
      {"Qwen3ForCausalLM", "qwen3"},
  };
  for (const auto& [k, v] : kMap) {
    if (k == name) return v;
  }
  return name;
}

// layer_types ["linear_attention", ..., "full_attention"] -> the full-attention period.
Result<int64_t> IntervalFromLayerTypes(const json& types, int64_t n_layer) {
  int64_t first_full = -1;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "full_attention") {
      first_full = static_cast<int64_t>(i);
      break;
    }
  }
  if (first_full < 0) {
    return Error(ErrorKind::kFormat, "config.json layer_types has no full_attention layer");
  }
  const int64_t k = first_full + 1;
  for (int64_t i = 0; i < n_layer && i < static_cast<int64_t>(types.size()); ++i) {
    const bool full = (i + 1) % k == 0;
    if ((types[static_cast<size_t>(i)] == "full_attention") != full) {
      return Error(ErrorKind::kUnsupported,
                   fmt::format("config.json layer_types is not periodic (layer {}); synth supports "
                               "full attention every k-th layer only",
                               i));
    }
  }
  return k;
}

// The shape every family has: layers, widths, heads, vocabulary, context,
// norm epsilon and RoPE.
Status ReadShape(const json& c, SynthSpec* s) {
  MOETUNE_ASSIGN_OR_RETURN(s->n_layer, GetInt(c, {"num_hidden_layers", "n_layer"}));
  MOETUNE_ASSIGN_OR_RETURN(s->n_embd, GetInt(c, {"hidden_size", "n_embd"}));
  MOETUNE_ASSIGN_OR_RETURN(s->n_head, GetInt(c, {"num_attention_heads"}));
  MOETUNE_ASSIGN_OR_RETURN(s->n_head_kv, GetIntOr(c, {"num_key_value_heads"}, s->n_head));
  if (s->n_head == 0) return Error(ErrorKind::kFormat, "config.json num_attention_heads is 0");
  MOETUNE_ASSIGN_OR_RETURN(s->head_dim, GetIntOr(c, {"head_dim"}, s->n_embd / s->n_head));
  MOETUNE_ASSIGN_OR_RETURN(s->n_vocab, GetInt(c, {"vocab_size"}));
  MOETUNE_ASSIGN_OR_RETURN(s->n_ctx_train, GetIntOr(c, {"max_position_embeddings"}, 4096));
  const double eps = GetFloatOr(c, {"rms_norm_eps"}, 1e-6);
  double theta = GetFloatOr(c, {"rope_theta"}, 10000.0);
  if (const json* rp = Find(c, {"rope_parameters"}); rp != nullptr && rp->is_object()) {
    theta = GetFloatOr(*rp, {"rope_theta"}, theta);
  }
  // GGUF stores both as f32: a value outside float's range cannot be converted.
  constexpr double kMaxF32 = 3.4e38;
  if (!(eps > 0 && eps < 1) || !(theta > 0 && theta < kMaxF32)) {
    return Error(ErrorKind::kFormat,
                 fmt::format("config.json rms_norm_eps {} or rope_theta {} is out of range (need "
                             "0 < rms_norm_eps < 1 and a positive rope_theta)",
                             eps, theta));
  }
  s->rms_eps = static_cast<float>(eps);
  s->rope_theta = static_cast<float>(theta);
  const double partial = GetFloatOr(c, {"partial_rotary_factor"}, 1.0);
  if (!(partial > 0.0 && partial <= 1.0)) {
    return Error(ErrorKind::kFormat,
                 fmt::format("config.json partial_rotary_factor {} is outside (0, 1]", partial));
  }
  // head_dim is checked against its range by ValidateSynthSpec below; here it
  // may still be any non-negative 64-bit value, so round in double first.
  s->n_rot = static_cast<int64_t>(
      std::min(std::round(static_cast<double>(s->head_dim) * partial), 9.0e18));
  return OkStatus();
}

// The experts (count, used, widths, shared ones) and the width of the dense
// feed-forward, whose keys depend on the family.
Status ReadExperts(const json& c, const std::string& arch, const std::string& mt, SynthSpec* s) {
  const bool moe_arch =
      arch != "qwen2" && arch != "qwen3" &&
      !(arch == "llama" && mt != "mixtral" && Find(c, {"num_local_experts"}) == nullptr);
  if (moe_arch) {
    MOETUNE_ASSIGN_OR_RETURN(s->n_expert,
                             GetInt(c, {"num_experts", "num_local_experts", "n_routed_experts"}));
    MOETUNE_ASSIGN_OR_RETURN(s->n_expert_used,
                             GetInt(c, {"num_experts_per_tok", "experts_per_token"}));
    if (s->n_expert == 0) {
      return Error(ErrorKind::kFormat,
                   fmt::format("config.json has 0 experts, but model_type '{}' is a "
                               "Mixture-of-Experts model; give the expert count",
                               mt));
    }
  }
  // Which key holds the expert width depends on the family.
  if (arch == "gpt-oss" || arch == "llama" || arch == "llama4") {
    MOETUNE_ASSIGN_OR_RETURN(s->n_ff_exp, GetInt(c, {"intermediate_size"}));
    if (arch == "llama4") {
      MOETUNE_ASSIGN_OR_RETURN(s->n_ff, GetIntOr(c, {"intermediate_size_mlp"}, s->n_ff_exp));
    } else {
      s->n_ff = s->n_ff_exp;
    }
  } else if (moe_arch) {
    MOETUNE_ASSIGN_OR_RETURN(s->n_ff_exp, GetInt(c, {"moe_intermediate_size"}));
    MOETUNE_ASSIGN_OR_RETURN(s->n_ff, GetIntOr(c, {"intermediate_size"}, s->n_ff_exp));
  } else {
    MOETUNE_ASSIGN_OR_RETURN(s->n_ff, GetInt(c, {"intermediate_size"}));
  }
  if (!moe_arch) s->n_ff_exp = 0;
  if (arch == "llama4") {
    s->n_expert_shared = 1;
    s->n_ff_shexp = s->n_ff_exp;
    MOETUNE_ASSIGN_OR_RETURN(const int64_t step, GetIntOr(c, {"interleave_moe_layer_step"}, 1));
    if (step != 1) {
      return Error(ErrorKind::kUnsupported,
                   "config.json interleave_moe_layer_step != 1 (Maverick-style) is not supported "
                   "by synth; use 1");
    }
  }
  MOETUNE_ASSIGN_OR_RETURN(const int64_t shi, GetIntOr(c, {"shared_expert_intermediate_size"}, 0));
  if (shi > 0) {
    s->n_expert_shared = 1;
    s->n_ff_shexp = shi;
  }
  MOETUNE_ASSIGN_OR_RETURN(const int64_t nsh, GetIntOr(c, {"n_shared_experts"}, 0));
  if (nsh > 0) {
    s->n_expert_shared = nsh;
    // Both factors are any non-negative 64-bit values here: a product that
    // overflows is a width far out of range (ValidateSynthSpec says which).
    const auto width = CheckedMul(static_cast<uint64_t>(s->n_ff_exp), static_cast<uint64_t>(nsh));
    s->n_ff_shexp = width && *width <= INT64_MAX ? static_cast<int64_t>(*width) : INT64_MAX;
  }
  MOETUNE_ASSIGN_OR_RETURN(s->leading_dense, GetIntOr(c, {"first_k_dense_replace"}, 0));
  return OkStatus();
}

// What only some families have: gpt-oss's sliding window, the linear
// attention of Qwen3.5 / Qwen3-Next, DeepSeek's MLA.
Status ReadFamilyExtras(const json& c, const std::string& arch, SynthSpec* s) {
  if (arch == "gpt-oss") {
    MOETUNE_ASSIGN_OR_RETURN(s->sliding_window, GetIntOr(c, {"sliding_window"}, 128));
    s->n_ff = s->n_ff_exp;
  }
  if (arch == "qwen35moe" || arch == "qwen3next") {
    if (const json* lt = Find(c, {"layer_types"}); lt != nullptr && lt->is_array()) {
      MOETUNE_ASSIGN_OR_RETURN(s->full_attention_interval, IntervalFromLayerTypes(*lt, s->n_layer));
    } else {
      MOETUNE_ASSIGN_OR_RETURN(s->full_attention_interval, GetInt(c, {"full_attention_interval"}));
    }
    MOETUNE_ASSIGN_OR_RETURN(s->ssm_conv_kernel, GetInt(c, {"linear_conv_kernel_dim"}));
    MOETUNE_ASSIGN_OR_RETURN(s->ssm_state, GetInt(c, {"linear_key_head_dim"}));
    MOETUNE_ASSIGN_OR_RETURN(s->ssm_groups, GetInt(c, {"linear_num_key_heads"}));
    MOETUNE_ASSIGN_OR_RETURN(s->ssm_dt_rank, GetInt(c, {"linear_num_value_heads"}));
    MOETUNE_ASSIGN_OR_RETURN(const int64_t value_dim,
                             GetIntOr(c, {"linear_value_head_dim"}, s->ssm_state));
    if (value_dim != s->ssm_state) {
      return Error(ErrorKind::kUnsupported,
                   "config.json linear_value_head_dim differs from linear_key_head_dim; llama.cpp "
                   "uses one ssm.state_size for both");
    }
  }
  if (arch == "deepseek2") {
    MOETUNE_ASSIGN_OR_RETURN(s->q_lora_rank, GetIntOr(c, {"q_lora_rank"}, 0));
    MOETUNE_ASSIGN_OR_RETURN(s->kv_lora_rank, GetInt(c, {"kv_lora_rank"}));
    MOETUNE_ASSIGN_OR_RETURN(s->qk_rope_dim, GetInt(c, {"qk_rope_head_dim"}));
    MOETUNE_ASSIGN_OR_RETURN(s->qk_nope_dim, GetInt(c, {"qk_nope_head_dim"}));
    MOETUNE_ASSIGN_OR_RETURN(s->v_head_dim, GetInt(c, {"v_head_dim"}));
    // Each is at most INT64_MAX here; their sum is checked before it is used.
    const auto head =
        CheckedAdd(static_cast<uint64_t>(s->qk_nope_dim), static_cast<uint64_t>(s->qk_rope_dim));
    s->head_dim = head && *head <= INT64_MAX ? static_cast<int64_t>(*head) : INT64_MAX;
    s->n_rot = s->qk_rope_dim;
    s->n_head_kv = s->n_head;
  }
  return OkStatus();
}

}  // namespace

Result<SynthSpec> SynthSpecFromHfConfig(const json& config_in) {
  if (!config_in.is_object()) return Error(ErrorKind::kFormat, "config.json is not a JSON object");
  json c = config_in;
  if (auto it = config_in.find("text_config"); it != config_in.end() && it->is_object()) {
    for (const auto& [k, v] : it->items()) c[k] = v;  // text model keys win
  }
  std::string mt;
  if (const json* m = Find(c, {"model_type"}); m != nullptr && m->is_string())
    mt = m->get<std::string>();
  if (mt.empty() || mt == "qwen3_5_moe_text" || mt == "llama4_text") {
    const std::string from_arch = ModelTypeFromArchitectures(c);
    if (mt.empty()) mt = from_arch;
  }
  if (mt.empty()) {
    return Error(ErrorKind::kFormat, "config.json has neither model_type nor architectures");
  }
  MOETUNE_ASSIGN_OR_RETURN(std::string arch, ArchForModelType(mt));
  SynthSpec s;
  s.arch = arch;
  s.model_name = fmt::format("{} (synthetic from config.json)", mt);
  MOETUNE_TRY(ReadShape(c, &s));

  MOETUNE_TRY(ReadExperts(c, arch, mt, &s));
  MOETUNE_TRY(ReadFamilyExtras(c, arch, &s));
  MOETUNE_TRY(ValidateSynthSpec(s));
  return s;
}

}  // namespace moetune
