#include "model/quant_recipe.h"

#include <algorithm>
#include <numeric>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

using namespace ggml_type;

// tensor_category upstream: broad roles found from the name, tested in this
// order (tensor_get_category), so "attn_qkv" wins over "attn_v" and so on.
enum class Category {
  kTokenEmbd,
  kAttnQ,
  kAttnV,
  kAttnK,
  kAttnQkv,
  kAttnKvB,
  kAttnOutput,
  kFfnUp,
  kFfnGate,
  kFfnDown,
  kOutput,
  kOther,
};

bool Has(std::string_view s, std::string_view part) { return s.find(part) != s.npos; }

Category CategoryOf(std::string_view name) {
  if (name == "output.weight") return Category::kOutput;
  if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") {
    return Category::kTokenEmbd;
  }
  if (Has(name, "attn_qkv.weight")) return Category::kAttnQkv;
  if (Has(name, "attn_kv_b.weight")) return Category::kAttnKvB;
  if (Has(name, "attn_v.weight")) return Category::kAttnV;
  if (Has(name, "attn_k.weight")) return Category::kAttnK;
  if (Has(name, "attn_q.weight")) return Category::kAttnQ;
  if (Has(name, "attn_output.weight")) return Category::kAttnOutput;
  if (Has(name, "ffn_up")) return Category::kFfnUp;
  if (Has(name, "ffn_gate")) return Category::kFfnGate;
  if (Has(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

// category_is_attn_v: the value-like projections share attn_v's extra bits
// and its counter (a fused QKV and MLA's kv_b hold the values).
bool IsAttnVLike(Category c) {
  return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB;
}

// The layer of "blk.N.*" as the loader's sscanf("blk.%d.") reads it; -1 otherwise.
int LayerOf(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return -1;
  size_t i = kPrefix.size();
  if (i >= name.size() || name[i] < '0' || name[i] > '9') return -1;
  int layer = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    layer = std::min(layer * 10 + (name[i] - '0'), 1 << 24);
  }
  return layer;
}

// use_more_bits upstream: the first and last eighth of the layers and every
// third layer in between.
bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// llama_ftype_get_default_type.
uint32_t DefaultType(LlamaFtype f) {
  switch (f) {
    case LlamaFtype::kF16:
      return kF16;
    case LlamaFtype::kQ8_0:
      return kQ8_0;
    case LlamaFtype::kQ4_K_S:
    case LlamaFtype::kQ4_K_M:
      return kQ4_K;
    case LlamaFtype::kQ5_K_S:
    case LlamaFtype::kQ5_K_M:
      return kQ5_K;
    case LlamaFtype::kQ6_K:
      return kQ6_K;
    case LlamaFtype::kMxfp4Moe:
      return kMXFP4;
  }
  return kF16;
}

uint32_t BlockSize(uint32_t type) {
  const auto info = GgmlTypeById(type);
  return info ? info->block_size : 1;
}

// The counters quantize_state_impl keeps while it walks the tensors.
struct Counters {
  int n_attention_wv = 0;
  int i_attention_wv = 0;
  int i_ffn_down = 0;
  bool tied_embeddings = true;  // until output.weight is seen
};

// The output head (and a tied token_embd): Q6_K unless the file type is Q8_0
// or MXFP4_MOE, or the rows do not fit the default type's block (Q8_0).
uint32_t OutputType(LlamaFtype f, int64_t ncols, uint32_t type) {
  if (f == LlamaFtype::kMxfp4Moe || ncols % BlockSize(type) != 0) return kQ8_0;
  return type == kQ8_0 ? kQ8_0 : kQ6_K;
}

// The attn_v-like branch of llama_tensor_get_type_impl for the file types of LlamaFtype.
uint32_t AttnVType(const QuantRecipeModel& m, LlamaFtype f, uint32_t type, Counters& c) {
  const bool more_bits = UseMoreBits(c.i_attention_wv, c.n_attention_wv);
  if ((f == LlamaFtype::kQ4_K_M || f == LlamaFtype::kQ5_K_M) && more_bits) {
    type = kQ6_K;
  } else if (f == LlamaFtype::kQ4_K_S && c.i_attention_wv < 4) {
    type = kQ5_K;
  }
  // 70B: eight query heads share each attn_v, so it is small and gets Q5_K.
  if (m.type_70b && (type == kQ3_K || type == kQ4_K)) type = kQ5_K;
  if (m.n_expert == 8) type = kQ8_0;  // Mixtral-like: "trades just ~128MB"
  ++c.i_attention_wv;
  return type;
}

// The ffn_down branch. With experts the layer is read from the name (experts
// of one layer need not be consecutive); a dense model counts ffn_down tensors.
uint32_t FfnDownType(const QuantRecipeModel& m, LlamaFtype f, std::string_view name, uint32_t type,
                     Counters& c) {
  const int n_layer = static_cast<int>(m.n_layer);
  const int i_layer = m.n_expert > 1 ? LayerOf(name) : c.i_ffn_down;
  if ((f == LlamaFtype::kQ4_K_M || f == LlamaFtype::kQ5_K_M) && UseMoreBits(i_layer, n_layer)) {
    type = kQ6_K;
  } else if (f == LlamaFtype::kQ4_K_S && i_layer < n_layer / 8) {
    type = kQ5_K;
  }
  ++c.i_ffn_down;
  return type;
}

// llama_tensor_get_type_impl for the file types of LlamaFtype. Falcon's own
// rules are left out: synth writes no falcon model.
uint32_t MixType(const QuantRecipeModel& m, LlamaFtype f, const QuantRecipeTensor& t, Category cat,
                 uint32_t type, Counters& c) {
  const bool q4_k = f == LlamaFtype::kQ4_K_S || f == LlamaFtype::kQ4_K_M;
  if (cat == Category::kOutput || (c.tied_embeddings && cat == Category::kTokenEmbd)) {
    return OutputType(f, t.ne[0], type);
  }
  if (f == LlamaFtype::kMxfp4Moe) {
    // MoE tensors MXFP4, the rest Q8_0. Any 3-D weight counts, MLA's
    // attn_k_b/attn_v_b included (upstream excludes those for bailingmoe3 only).
    return t.ne.size() > 2 && t.ne[2] > 1 ? kMXFP4 : kQ8_0;
  }
  if (cat == Category::kTokenEmbd) return type;  // no change for these file types
  if (IsAttnVLike(cat)) return AttnVType(m, f, type, c);
  if (cat == Category::kAttnK) return m.n_expert == 8 ? kQ8_0 : type;
  if (cat == Category::kFfnDown) return FfnDownType(m, f, t.name, type, c);
  if (cat == Category::kAttnOutput) return m.n_expert == 8 && q4_k ? kQ5_K : type;
  return type;
}

// tensor_type_fallback: a row that is not a whole number of blocks takes a
// type with 32-element blocks, and F16 when even that does not fit. llama.cpp
// has no fallback for Q8_0 or MXFP4 (it stops); F16 stands in for it here.
uint32_t Fallback(uint32_t type, int64_t ncols) {
  if (ncols % BlockSize(type) == 0) return type;
  uint32_t next = kF16;
  switch (type) {
    case kQ2_K:
    case kQ3_K:
      next = kQ4_0;
      break;
    case kQ4_K:
      next = kQ5_0;
      break;
    case kQ5_K:
      next = kQ5_1;
      break;
    case kQ6_K:
      next = kQ8_0;
      break;
    default:
      break;
  }
  return ncols % BlockSize(next) == 0 ? next : kF16;
}

}  // namespace

std::string_view LlamaFtypeName(LlamaFtype ftype) {
  switch (ftype) {
    case LlamaFtype::kF16:
      return "F16";
    case LlamaFtype::kQ8_0:
      return "Q8_0";
    case LlamaFtype::kQ4_K_S:
      return "Q4_K_S";
    case LlamaFtype::kQ4_K_M:
      return "Q4_K_M";
    case LlamaFtype::kQ5_K_S:
      return "Q5_K_S";
    case LlamaFtype::kQ5_K_M:
      return "Q5_K_M";
    case LlamaFtype::kQ6_K:
      return "Q6_K";
    case LlamaFtype::kMxfp4Moe:
      return "MXFP4_MOE";
  }
  return "?";
}

bool IsLlamaType70B(std::string_view arch, int64_t n_layer, int64_t n_expert, int64_t n_head,
                    int64_t n_head_kv) {
  if (n_layer != 80) return false;
  if (arch == "llama") return n_expert != 8 && n_head != n_head_kv;
  return arch == "qwen2";
}

bool QuantizerTouches(std::string_view name, size_t n_dims) {
  if (n_dims < 2) return false;
  constexpr std::string_view kWeight = "weight";
  if (name.size() < kWeight.size() || name.substr(name.size() - kWeight.size()) != kWeight) {
    return false;
  }
  // The exclusions of tensor_allows_quantization that can name a tensor of
  // the architectures moetune reads; the others (RWKV, BERT, vision) cannot.
  for (std::string_view keep : {"_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d",
                                "shortconv.conv.weight", "altup", "laurel", "per_layer_model_proj",
                                "attn_rel_b.weight", "position_embd", "token_types.weight"}) {
    if (Has(name, keep)) return false;
  }
  return true;
}

std::vector<uint32_t> QuantRecipeTypes(const QuantRecipeModel& model, LlamaFtype ftype,
                                       std::span<const QuantRecipeTensor> tensors) {
  // The quantizer walks the tensors in the loader's order: by layer (-1 for
  // the global tensors), then by name. The attn_v counter depends on it.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = LayerOf(tensors[a].name), lb = LayerOf(tensors[b].name);
    return la != lb ? la < lb : tensors[a].name < tensors[b].name;
  });
  Counters c;
  for (const auto& t : tensors) {
    const Category cat = CategoryOf(t.name);
    if (IsAttnVLike(cat)) ++c.n_attention_wv;
    if (cat == Category::kOutput) c.tied_embeddings = false;
  }
  const uint32_t default_type = DefaultType(ftype);
  const bool mix = default_type != kF16;  // ggml_is_quantized(default type)
  std::vector<uint32_t> types(tensors.size());
  for (size_t i : order) {
    const QuantRecipeTensor& t = tensors[i];
    // ggml_n_dims: trailing dimensions of 1 do not count.
    size_t n_dims = t.ne.size();
    while (n_dims > 1 && t.ne[n_dims - 1] == 1) --n_dims;
    if (!QuantizerTouches(t.name, n_dims)) {
      types[i] = t.source_type;
    } else if (!mix) {
      types[i] = default_type;
    } else {
      const uint32_t type = MixType(model, ftype, t, CategoryOf(t.name), default_type, c);
      types[i] = Fallback(type, t.ne[0]);
    }
  }
  return types;
}

}  // namespace moetune
