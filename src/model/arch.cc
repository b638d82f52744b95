#include "model/arch.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace moetune {

const char* TensorRoleName(TensorRole role) {
  switch (role) {
    case TensorRole::kTokenEmbedding:
      return "token_embd";
    case TensorRole::kOutput:
      return "output";
    case TensorRole::kNorm:
      return "norm";
    case TensorRole::kAttention:
      return "attention";
    case TensorRole::kRouter:
      return "router";
    case TensorRole::kRoutedExperts:
      return "experts";
    case TensorRole::kSharedExperts:
      return "shared_experts";
    case TensorRole::kDenseFfn:
      return "dense_ffn";
    case TensorRole::kRecurrent:
      return "recurrent";
    case TensorRole::kOther:
      return "other";
  }
  return "other";
}

const char* AttentionKindName(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kFull:
      return "full";
    case AttentionKind::kSlidingWindow:
      return "sliding_window";
    case AttentionKind::kChunked:
      return "chunked";
    case AttentionKind::kRecurrent:
      return "recurrent";
    case AttentionKind::kMla:
      return "mla";
    case AttentionKind::kNone:
      return "none";
  }
  return "none";
}

// n_embd_r / n_embd_s: src/llama-hparams.cpp (Mamba-style conv and ssm states,
// also used by Gated DeltaNet in qwen3next / qwen35moe).
uint64_t Hparams::n_embd_r() const {
  if (ssm_d_conv == 0) return 0;
  return uint64_t{ssm_d_conv - 1} * (uint64_t{ssm_d_inner} + 2ull * ssm_n_group * ssm_d_state);
}
uint64_t Hparams::n_embd_s() const { return uint64_t{ssm_d_state} * ssm_d_inner; }

const std::vector<std::string>& KnownArchitectures() {
  static const std::vector<std::string> k = {
      "llama",  "qwen2",   "qwen3",   "qwen2moe",  "qwen3moe", "qwen3next", "qwen35moe",
      "qwen35", "gpt-oss", "glm4moe", "deepseek2", "llama4",   "mixtral"};
  return k;
}

namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool Contains(std::string_view s, std::string_view p) {
  return s.find(p) != std::string_view::npos;
}

}  // namespace

TensorClass ClassifyTensor(const std::string& name, bool recurrent_layer) {
  TensorClass c;
  std::string_view n = name;
  if (StartsWith(n, "blk.")) {
    std::string_view rest = n.substr(4);
    int layer = -1;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
    if (ec == std::errc() && ptr < rest.data() + rest.size() && *ptr == '.' && layer >= 0) {
      c.layer = layer;
      n = std::string_view(ptr + 1, rest.data() + rest.size() - (ptr + 1));
    }
  }
  // Base name: up to the first '.', i.e. without ".weight" / ".bias" / ".scale".
  const std::string_view base = n.substr(0, n.find('.'));
  if (c.layer < 0) {
    if (base == "token_embd")
      c.role = TensorRole::kTokenEmbedding;
    else if (base == "output")
      c.role = TensorRole::kOutput;
    else if (Contains(base, "norm"))
      c.role = TensorRole::kNorm;
    else
      c.role = TensorRole::kOther;
    return c;
  }
  // Order matters: "ffn_gate_inp_shexp" is a shared-expert gate, not the router.
  if (StartsWith(base, "nextn") || StartsWith(n, "nextn.")) {
    c.role = TensorRole::kOther;  // the multi-token-prediction head
    return c;
  }
  if (Contains(base, "_exps") || base == "ffn_gate_up_exps")
    c.role = TensorRole::kRoutedExperts;
  else if (Contains(base, "_shexp"))
    c.role = TensorRole::kSharedExperts;
  else if (base == "ffn_gate_inp" || base == "exp_probs_b")
    c.role = TensorRole::kRouter;
  else if (StartsWith(base, "ssm_"))
    c.role = TensorRole::kRecurrent;
  else if (Contains(base, "norm"))
    c.role = TensorRole::kNorm;
  else if (StartsWith(base, "attn_") || StartsWith(base, "time_mix")) {
    c.role = recurrent_layer ? TensorRole::kRecurrent : TensorRole::kAttention;
  } else if (base == "ffn_gate" || base == "ffn_up" || base == "ffn_down")
    c.role = TensorRole::kDenseFfn;
  else
    c.role = TensorRole::kOther;
  return c;
}

namespace {

uint32_t U32(const Metadata& md, const std::string& key, uint32_t def = 0) {
  auto v = md.GetUint(key);
  if (!v || *v > 0xffffffffull) return def;
  return static_cast<uint32_t>(*v);
}

struct LayerTensors {
  bool has_experts = false;
  bool has_ssm = false;
  bool has_attn_kv = false;  // attn_k / attn_v / attn_qkv / MLA kv
  int64_t k_rows = 0;        // attn_k.weight ne[1]
  int64_t v_rows = 0;        // attn_v.weight ne[1]
};

// First pass over the tensors: which blk.N exist and what they hold (and
// whether the experts have biases); `*max_layer` the highest N.
std::map<int, LayerTensors> ScanLayers(const GgufModel& model, Hparams* hp, int* max_layer) {
  std::map<int, LayerTensors> lt;
  for (const auto& t : model.tensors) {
    TensorClass c = ClassifyTensor(t.name, false);
    if (c.layer < 0) continue;
    *max_layer = std::max(*max_layer, c.layer);
    LayerTensors& l = lt[c.layer];
    const std::string base = t.name.substr(t.name.find('.', 4) + 1);
    if (c.role == TensorRole::kRoutedExperts) {
      l.has_experts = true;
      if (t.name.size() > 5 && t.name.compare(t.name.size() - 5, 5, ".bias") == 0)
        hp->expert_bias = true;
    }
    if (StartsWith(base, "ssm_")) l.has_ssm = true;
    if (StartsWith(base, "attn_k.") || StartsWith(base, "attn_v.") ||
        StartsWith(base, "attn_qkv.") || StartsWith(base, "attn_kv_a_mqa.")) {
      l.has_attn_kv = true;
    }
    if (StartsWith(base, "attn_k.weight") && t.ne.size() >= 2) l.k_rows = t.ne[1];
    if (StartsWith(base, "attn_v.weight") && t.ne.size() >= 2) l.v_rows = t.ne[1];
  }

  return lt;
}

// The hyperparameters the metadata states, and the vocabulary (the
// tokenizer's size, else token_embd's second dimension).
void ReadHparams(const GgufModel& model, const std::string& a, Hparams* hp) {
  hp->n_embd = U32(model.metadata(), a + "embedding_length");
  hp->n_ctx_train = U32(model.metadata(), a + "context_length");
  hp->n_expert = U32(model.metadata(), a + "expert_count");
  hp->n_expert_used = U32(model.metadata(), a + "expert_used_count");
  hp->n_expert_shared = U32(model.metadata(), a + "expert_shared_count");
  hp->n_ff_exp = U32(model.metadata(), a + "expert_feed_forward_length");
  if (auto ff = model.metadata().GetPerLayer(a + "feed_forward_length", hp->n_layer);
      ff && !ff->empty())
    hp->n_ff = static_cast<uint32_t>(
        std::clamp<int64_t>(*std::max_element(ff->begin(), ff->end()), 0, 0xffffffff));
  hp->n_swa = U32(model.metadata(), a + "attention.sliding_window");
  hp->full_attention_interval = U32(model.metadata(), a + "full_attention_interval");
  hp->leading_dense = U32(model.metadata(), a + "leading_dense_block_count");
  hp->nextn_layers = U32(model.metadata(), a + "nextn_predict_layers");
  hp->ssm_d_conv = U32(model.metadata(), a + "ssm.conv_kernel");
  hp->ssm_d_inner = U32(model.metadata(), a + "ssm.inner_size");
  hp->ssm_d_state = U32(model.metadata(), a + "ssm.state_size");
  hp->ssm_n_group = U32(model.metadata(), a + "ssm.group_count");
  hp->kv_lora_rank = U32(model.metadata(), a + "attention.kv_lora_rank");
  hp->n_rot = U32(model.metadata(), a + "rope.dimension_count");

  if (const GgufValue* tok = model.metadata().Find("tokenizer.ggml.tokens");
      tok && tok->type == GgufValueType::kArray)
    hp->n_vocab = static_cast<uint32_t>(std::min<uint64_t>(tok->array_count, 0xffffffffu));
  for (const auto& t : model.tensors) {
    if (t.name == "token_embd.weight" && t.ne.size() >= 2) {
      if (hp->n_embd == 0) hp->n_embd = static_cast<uint32_t>(t.ne[0]);
      if (hp->n_vocab == 0) hp->n_vocab = static_cast<uint32_t>(t.ne[1]);
    }
  }
}

// What every layer's reading shares.
struct LayerContext {
  const Hparams& hp;
  std::string a;  // the metadata prefix, "<arch>."
  bool known_arch = false;
  std::optional<std::vector<int64_t>> heads = std::nullopt, heads_kv = std::nullopt;
  bool qwen_hybrid = false;
  uint32_t fai = 4;  // full-attention interval
  uint32_t llama4_chunk = 8192;
  bool is_mla = false;
  uint32_t n_layer_kv = 0;
};

// Layer `il`: MoE or not, heads, its attention kind and KV widths.
Status FillLayer(const LayerContext& ctx, size_t il, const LayerTensors& t, LayerInfo* L) {
  L->index = static_cast<int>(il);
  L->moe = t.has_experts;
  // Per-layer arrays hold int64 values: anything outside u32 is a corrupt header.
  auto u32_at = [&](const std::optional<std::vector<int64_t>>& v) -> std::optional<uint32_t> {
    if (!v) return 0u;
    const int64_t x = (*v)[il];
    if (x < 0 || x > 0xffffffff) return std::nullopt;
    return static_cast<uint32_t>(x);
  };
  const auto nh = u32_at(ctx.heads), nkv = u32_at(ctx.heads_kv);
  if (!nh || !nkv)
    return Error(ErrorKind::kFormat,
                 fmt::format("{}attention.head_count(_kv) of layer {} is out of range", ctx.a, il));
  L->n_head = *nh;
  L->n_head_kv = *nkv;
  bool recurrent = ctx.qwen_hybrid ? ((il + 1) % ctx.fai != 0) : t.has_ssm;
  if (recurrent) {
    L->attention = AttentionKind::kRecurrent;
    L->has_kv = false;
    return OkStatus();
  }
  if (il >= ctx.n_layer_kv) {
    L->attention = AttentionKind::kNone;
    L->has_kv = false;
    return OkStatus();
  }
  if (ctx.is_mla) {
    // MLA caches the compressed latent plus the rope part, one "head":
    // n_embd_head_k = kv_lora_rank + n_rot; V is a view of it (no V cache).
    L->attention = AttentionKind::kMla;
    L->n_head_kv = 1;
    const uint64_t width = uint64_t{ctx.hp.kv_lora_rank} + ctx.hp.n_rot;
    if (width > 0xffffffffu)
      return Error(ErrorKind::kFormat,
                   fmt::format("{}attention.kv_lora_rank + rope.dimension_count = {} is "
                               "implausible; the header is corrupt",
                               ctx.a, width));
    L->n_embd_k_gqa = static_cast<uint32_t>(width);
    L->n_embd_v_gqa = 0;
    return OkStatus();
  }
  if (ctx.hp.arch == "gpt-oss" && ctx.hp.n_swa > 0 && il % 2 == 0) {
    L->attention = AttentionKind::kSlidingWindow;
    L->window = ctx.hp.n_swa;
  } else if (ctx.hp.arch == "llama4" && il % 4 < 3) {
    L->attention = AttentionKind::kChunked;
    L->window = ctx.llama4_chunk;
  }
  // n_embd_k_gqa = n_embd_head_k * n_head_kv in 64 bits: a crafted header
  // must be an error, not a wrapped width.
  const uint64_t kw = uint64_t{ctx.hp.n_embd_head_k} * L->n_head_kv;
  const uint64_t vw = uint64_t{ctx.hp.n_embd_head_v} * L->n_head_kv;
  if (kw > 0xffffffffu || vw > 0xffffffffu)
    return Error(ErrorKind::kFormat,
                 fmt::format("layer {}: key/value width {} x {} heads is implausible; the "
                             "header is corrupt",
                             il, ctx.hp.n_embd_head_k, L->n_head_kv));
  L->n_embd_k_gqa = static_cast<uint32_t>(kw);
  L->n_embd_v_gqa = static_cast<uint32_t>(vw);
  if (!ctx.known_arch || L->n_embd_k_gqa == 0) {
    // Fall back to the projection shapes: attn_k is [n_embd, n_embd_k_gqa].
    if (t.k_rows > 0)
      L->n_embd_k_gqa = static_cast<uint32_t>(std::min<int64_t>(t.k_rows, 0xffffffff));
    if (t.v_rows > 0)
      L->n_embd_v_gqa = static_cast<uint32_t>(std::min<int64_t>(t.v_rows, 0xffffffff));
    if (!t.has_attn_kv && L->n_embd_k_gqa == 0) {
      L->attention = AttentionKind::kNone;
      L->has_kv = false;
    }
  }
  return OkStatus();
}

// The expert width and count from the tensor shapes when the metadata lacks
// them, and one expert used when that is missing.
void FillExpertShape(const GgufModel& model, const std::string& a, ModelArch* out) {
  if (out->hp.n_ff_exp == 0 && out->hp.n_expert > 0) {
    for (const auto& t : model.tensors) {
      if (t.name.find("ffn_down_exps.weight") != std::string::npos && t.ne.size() >= 1) {
        out->hp.n_ff_exp = static_cast<uint32_t>(t.ne[0]);
        break;
      }
    }
  }
  if (out->hp.n_expert == 0) {
    for (const auto& t : model.tensors) {
      if (t.name.find("_exps.weight") != std::string::npos && t.ne.size() == 3) {
        out->hp.n_expert = static_cast<uint32_t>(t.ne[2]);
        out->warnings.push_back(
            fmt::format("{}expert_count missing; took {} from tensor shapes", a, out->hp.n_expert));
        break;
      }
    }
  }
  if (out->hp.n_expert > 0 && out->hp.n_expert_used == 0) {
    out->warnings.push_back(
        fmt::format("{}expert_used_count missing; bytes read per token assume 1 expert", a));
    out->hp.n_expert_used = 1;
  }
}

}  // namespace

Result<ModelArch> AnalyzeArchitecture(const GgufModel& model) {
  ModelArch out;
  Hparams& hp = out.hp;
  const Metadata& md = model.metadata();
  hp.arch = model.architecture();
  hp.name = md.GetString("general.name").value_or("");
  const std::string a = hp.arch + ".";
  out.known_arch = std::find(KnownArchitectures().begin(), KnownArchitectures().end(), hp.arch) !=
                   KnownArchitectures().end();
  if (hp.arch.empty())
    out.warnings.push_back("general.architecture is missing; working from tensor names");
  else if (!out.known_arch)
    out.warnings.push_back(fmt::format(
        "architecture '{}' is not one moetune knows; layer kinds and KV sizes are inferred from "
        "tensor names and shapes and may be wrong",
        hp.arch));

  // First pass: which blk.N exist and what they hold.
  int max_layer = -1;
  std::map<int, LayerTensors> lt = ScanLayers(model, &hp, &max_layer);

  hp.n_layer = U32(md, a + "block_count", static_cast<uint32_t>(max_layer + 1));
  if (hp.n_layer == 0)
    return Error(ErrorKind::kFormat,
                 "the model has no layers (no '<arch>.block_count' key and no blk.N tensors); "
                 "is this a language model GGUF?");
  if (hp.n_layer > kMaxLayers)
    return Error(ErrorKind::kFormat,
                 fmt::format("{}block_count = {} is implausible", a, hp.n_layer));
  if (max_layer >= static_cast<int>(hp.n_layer))
    out.warnings.push_back(
        fmt::format("tensors name layer {} but block_count is {}", max_layer, hp.n_layer));

  ReadHparams(model, a, &hp);

  const size_t n = hp.n_layer;
  LayerContext ctx{.hp = hp, .a = a, .known_arch = out.known_arch};
  ctx.heads = md.GetPerLayer(a + "attention.head_count", n);
  ctx.heads_kv = md.GetPerLayer(a + "attention.head_count_kv", n);
  if (!ctx.heads_kv) ctx.heads_kv = ctx.heads;  // llama.cpp: n_head_kv defaults to n_head
  const auto& heads = ctx.heads;
  const uint32_t head0 =
      heads && !heads->empty()
          ? static_cast<uint32_t>(*std::max_element(heads->begin(), heads->end()))
          : 0;
  hp.n_embd_head_k = U32(md, a + "attention.key_length", head0 ? hp.n_embd / head0 : 0);
  hp.n_embd_head_v = U32(md, a + "attention.value_length", hp.n_embd_head_k);

  // Recurrent layers. qwen3next / qwen35*: every full_attention_interval-th
  // layer is full attention, the rest Gated DeltaNet (llama-model.cpp:
  // recurrent_layer_arr[i] = ((i + 1) % full_attn_interval != 0)). Any other
  // architecture: a layer with ssm_* tensors is recurrent.
  ctx.qwen_hybrid = hp.arch == "qwen3next" || hp.arch == "qwen35moe" || hp.arch == "qwen35";
  ctx.fai = hp.full_attention_interval ? hp.full_attention_interval : 4;
  // Sliding window layers: gpt-oss alternates, starting with a sliding layer
  // (set_swa_pattern(2)); llama4 uses chunked attention on 3 of every 4 layers
  // (set_swa_pattern(4), chunk 8192 unless the file says otherwise).
  ctx.llama4_chunk = U32(md, a + "attention.chunk_size", 8192);
  ctx.is_mla = hp.arch == "deepseek2" && hp.kv_lora_rank > 0;
  // llama.cpp keeps no KV for trailing NextN/MTP layers (n_layer_kv_from_start).
  ctx.n_layer_kv = hp.nextn_layers < hp.n_layer ? hp.n_layer - hp.nextn_layers : hp.n_layer;

  out.layers.resize(n);
  for (size_t il = 0; il < n; ++il) {
    MOETUNE_TRY(FillLayer(ctx, il, lt[static_cast<int>(il)], &out.layers[il]));
  }
  FillExpertShape(model, a, &out);

  out.tensors.reserve(model.tensors.size());
  for (const auto& t : model.tensors) {
    TensorClass c = ClassifyTensor(t.name, false);
    if (c.layer >= 0 && c.layer < static_cast<int>(n) &&
        out.layers[static_cast<size_t>(c.layer)].attention == AttentionKind::kRecurrent) {
      c = ClassifyTensor(t.name, true);
    }
    out.tensors.push_back(c);
  }
  return out;
}

}  // namespace moetune
