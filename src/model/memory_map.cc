#include "model/memory_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "gguf/ggml_type.h"

namespace moetune {

int64_t Sum(const RoleBytes& rb) {
  int64_t s = 0;
  for (int64_t v : rb) s += v;
  return s;
}

int64_t WeightMap::expert_total() const {
  int64_t s = 0;
  for (const auto& l : layers) s += l.experts();
  return s;
}

int64_t WeightMap::by_role(TensorRole r) const {
  int64_t s = At(global, r);
  for (const auto& l : layers) s += At(l.bytes, r);
  return s;
}

WeightMap ComputeWeightMap(const GgufModel& model, const ModelArch& arch) {
  WeightMap wm;
  wm.layers.resize(arch.layers.size());
  for (size_t i = 0; i < wm.layers.size(); ++i) wm.layers[i].layer = static_cast<int>(i);
  bool has_output = false;
  int64_t token_embd = 0;
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const TensorInfo& t = model.tensors[i];
    const TensorClass& c = arch.tensors[i];
    const auto bytes = static_cast<int64_t>(t.n_bytes);
    wm.total += bytes;
    if (c.layer >= 0 && c.layer < static_cast<int>(wm.layers.size())) {
      At(wm.layers[static_cast<size_t>(c.layer)].bytes, c.role) += bytes;
    } else {
      At(wm.global, c.role) += bytes;
      if (c.role == TensorRole::kOutput) has_output = true;
      if (c.role == TensorRole::kTokenEmbedding) token_embd += bytes;
    }
  }
  // Per generated token: every non-expert weight of every layer, k of n routed
  // experts, the output norm and the LM head (tied to token_embd when absent).
  const double used_fraction =
      arch.hp.n_expert > 0 ? static_cast<double>(arch.hp.n_expert_used) / arch.hp.n_expert : 1.0;
  double per_token = 0;
  for (const auto& l : wm.layers) {
    per_token += static_cast<double>(l.total() - l.experts()) +
                 static_cast<double>(l.experts()) * used_fraction;
  }
  per_token += static_cast<double>(At(wm.global, TensorRole::kNorm));
  per_token += static_cast<double>(has_output ? At(wm.global, TensorRole::kOutput) : token_embd);
  wm.bytes_per_token = static_cast<int64_t>(per_token);
  return wm;
}

namespace {

// Checked size arithmetic on non-negative int64 values (headers are untrusted).
std::optional<int64_t> Mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> Add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

int64_t Pad(int64_t x, int64_t n) { return (x + n - 1) / n * n; }

// Bytes of one cache row of n values: whole blocks (llama.cpp requires n to be
// a multiple of the block size). Unknown types count 2 bytes per value.
std::optional<int64_t> RowBytes(uint32_t type, int64_t n) {
  auto t = GgmlTypeById(type);
  if (!t || t->block_size == 0) return Mul(n, 2);
  return Mul((n + t->block_size - 1) / t->block_size, t->type_size);
}

Error Overflow(const char* what) {
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("the {} size overflows 64 bits: the model's dimensions or the context "
                           "are implausible; check the file and -c/--parallel",
                           what));
}

}  // namespace

int64_t ContextLayout::SwaCells(int64_t window, bool swa_full) const {
  if (swa_full) return n_ctx_seq;
  // src/llama-kv-cache-iswa.cpp: min(size_base, GGML_PAD(n_swa*(unified ? n_seq : 1) + n_ubatch,
  // 256))
  const int64_t want = window * (unified ? n_seq : 1) + n_ubatch;
  return std::min(n_ctx_seq, Pad(want, 256));
}

Result<ContextLayout> LayoutContext(const ContextParams& cp) {
  // cparams.n_ctx is a uint32_t in llama.cpp.
  constexpr int64_t kMaxCtx = int64_t{1} << 32;
  if (cp.n_ctx < 1 || cp.n_ctx >= kMaxCtx)
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("context {} is out of range: use 1 to {} tokens", cp.n_ctx, kMaxCtx - 256));
  if (cp.n_seq < 1 || cp.n_seq > kMaxSequences)
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} parallel sequences is out of range: llama.cpp accepts 1 to {}",
                             cp.n_seq, kMaxSequences));
  if (cp.n_batch < 1 || cp.n_ubatch < 1)
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("batch {} / micro-batch {}: both must be at least 1", cp.n_batch, cp.n_ubatch));
  ContextLayout l;
  l.n_seq = cp.n_seq;
  l.unified = cp.kv_unified || cp.n_seq == 1;
  if (l.unified) {
    l.n_ctx_seq = Pad(cp.n_ctx, 256);
    l.n_ctx = l.n_ctx_seq;
  } else {
    if (cp.n_ctx < cp.n_seq)
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("context {} is smaller than the {} slots that share it; give each "
                               "slot at least one token",
                               cp.n_ctx, cp.n_seq));
    l.n_stream = cp.n_seq;
    l.n_ctx_seq = Pad(cp.n_ctx / cp.n_seq, 256);
    l.n_ctx = l.n_ctx_seq * cp.n_seq;
  }
  // Causal models: the batch is limited by the context as given (before padding).
  l.n_batch = std::min(cp.n_ctx, cp.n_batch);
  l.n_ubatch = std::min(l.n_batch, cp.n_ubatch);
  // The reserve ubatch splits its tokens evenly over the sequences, rounding
  // up: -np 3 with -ub 512 reserves 3 x 171 = 513 tokens (llama-server's
  // inputs are [513] then).
  const int64_t tokens = std::min(l.n_ctx, l.n_ubatch);
  l.reserve_seqs = std::min<int64_t>(cp.n_seq, tokens);
  l.reserve_tokens = (tokens + l.reserve_seqs - 1) / l.reserve_seqs * l.reserve_seqs;
  // graph_reserve: "making n_tokens a multiple of n_seqs - n_tokens = 513,
  // n_seqs = 3, n_outputs = 512": the outputs keep the unrounded count.
  l.reserve_outputs = cp.reserve_outputs == ReserveOutputs::kAllTokens ? tokens : l.reserve_seqs;
  return l;
}

Result<ContextMemory> ComputeContextMemory(const ModelArch& arch, const ContextParams& cp) {
  ContextMemory cm;
  MOETUNE_ASSIGN_OR_RETURN(cm.layout, LayoutContext(cp));
  const ContextLayout& l = cm.layout;
  cm.n_ctx_padded = l.n_ctx;
  const Hparams& hp = arch.hp;
  // src/llama-memory-recurrent.cpp: one f32 r and s row per sequence.
  const auto state_row = Mul(
      static_cast<int64_t>(std::min<uint64_t>(hp.n_embd_r() + hp.n_embd_s(), uint64_t{1} << 62)),
      4);
  for (const LayerInfo& L : arch.layers) {
    LayerContext lc;
    lc.layer = L.index;
    if (L.attention == AttentionKind::kRecurrent) {
      const auto s = state_row ? Mul(*state_row, l.n_seq) : std::nullopt;
      if (!s) return Overflow("recurrent state");
      lc.state_bytes = *s;
    } else if (L.has_kv) {
      int64_t cells = l.n_ctx_seq;
      if (L.attention == AttentionKind::kSlidingWindow || L.attention == AttentionKind::kChunked)
        cells = l.SwaCells(L.window, cp.swa_full);
      lc.cells = cells * l.n_stream;
      const auto k_row = RowBytes(cp.type_k, L.n_embd_k_gqa);
      const auto v_row =
          L.n_embd_v_gqa ? RowBytes(cp.type_v, L.n_embd_v_gqa) : std::optional<int64_t>(0);
      const auto k = k_row ? Mul(*k_row, lc.cells) : std::nullopt;
      const auto v = v_row ? Mul(*v_row, lc.cells) : std::nullopt;
      if (!k || !v) return Overflow("KV cache");
      lc.k_bytes = *k;
      lc.v_bytes = *v;
    }
    const auto kv = Add(cm.kv_bytes, lc.k_bytes + lc.v_bytes);
    const auto st = Add(cm.state_bytes, lc.state_bytes);
    if (!kv || !st) return Overflow("KV cache");
    cm.kv_bytes = *kv;
    cm.state_bytes = *st;
    if (L.attention == AttentionKind::kFull || L.attention == AttentionKind::kMla)
      cm.kv_growing_bytes += lc.k_bytes + lc.v_bytes;
    cm.layers.push_back(lc);
  }
  if (!Add(cm.kv_bytes, cm.state_bytes)) return Overflow("context");
  return cm;
}

int64_t KvBytesPerToken(const ModelArch& arch, uint32_t type_k, uint32_t type_v) {
  int64_t b = 0;
  for (const LayerInfo& L : arch.layers) {
    if (!L.has_kv) continue;
    if (L.attention != AttentionKind::kFull && L.attention != AttentionKind::kMla) continue;
    b += RowBytes(type_k, L.n_embd_k_gqa).value_or(0);
    if (L.n_embd_v_gqa) b += RowBytes(type_v, L.n_embd_v_gqa).value_or(0);
  }
  return b;
}

}  // namespace moetune
