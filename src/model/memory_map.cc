#include "model/memory_map.h"

#include <algorithm>

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

int64_t Pad(int64_t x, int64_t n) { return (x + n - 1) / n * n; }

int64_t RowBytes(uint32_t type, int64_t n) {
  auto t = GgmlTypeById(type);
  if (!t || t->block_size == 0) return n * 2;
  // Cache rows are whole blocks; llama.cpp requires n to be a multiple of the block size.
  return (n + t->block_size - 1) / t->block_size * t->type_size;
}

}  // namespace

ContextMemory ComputeContextMemory(const ModelArch& arch, const ContextParams& cp) {
  ContextMemory cm;
  const int64_t n_seq = std::max(1, cp.n_seq);
  // src/llama-context.cpp: n_ctx padded to 256; non-unified caches split it
  // into per-sequence streams, each padded to 256.
  int64_t n_ctx = Pad(std::max<int64_t>(cp.n_ctx, 1), 256);
  int64_t per_stream = n_ctx;
  int64_t n_stream = 1;
  if (!cp.kv_unified && n_seq > 1) {
    per_stream = Pad(n_ctx / n_seq, 256);
    n_stream = n_seq;
    n_ctx = per_stream * n_seq;
  }
  cm.n_ctx_padded = n_ctx;
  const Hparams& hp = arch.hp;
  for (const LayerInfo& L : arch.layers) {
    LayerContext lc;
    lc.layer = L.index;
    if (L.attention == AttentionKind::kRecurrent) {
      // src/llama-memory-recurrent.cpp: one f32 r and s row per sequence.
      lc.state_bytes = static_cast<int64_t>(hp.n_embd_r() + hp.n_embd_s()) * 4 * n_seq;
    } else if (L.has_kv) {
      int64_t cells = per_stream;
      if ((L.attention == AttentionKind::kSlidingWindow ||
           L.attention == AttentionKind::kChunked) &&
          !cp.swa_full) {
        // src/llama-kv-cache-iswa.cpp
        const int64_t want =
            static_cast<int64_t>(L.window) * (cp.kv_unified ? n_seq : 1) + cp.n_ubatch;
        cells = Pad(std::min(per_stream, want), 256);
      }
      lc.cells = cells * n_stream;
      lc.k_bytes = RowBytes(cp.type_k, L.n_embd_k_gqa) * lc.cells;
      lc.v_bytes = L.n_embd_v_gqa ? RowBytes(cp.type_v, L.n_embd_v_gqa) * lc.cells : 0;
    }
    cm.kv_bytes += lc.k_bytes + lc.v_bytes;
    if (L.attention == AttentionKind::kFull || L.attention == AttentionKind::kMla)
      cm.kv_growing_bytes += lc.k_bytes + lc.v_bytes;
    cm.state_bytes += lc.state_bytes;
    cm.layers.push_back(lc);
  }
  return cm;
}

int64_t KvBytesPerToken(const ModelArch& arch, uint32_t type_k, uint32_t type_v) {
  int64_t b = 0;
  for (const LayerInfo& L : arch.layers) {
    if (!L.has_kv) continue;
    if (L.attention != AttentionKind::kFull && L.attention != AttentionKind::kMla) continue;
    b += RowBytes(type_k, L.n_embd_k_gqa);
    if (L.n_embd_v_gqa) b += RowBytes(type_v, L.n_embd_v_gqa);
  }
  return b;
}

ComputeEstimate EstimateCompute(const ModelArch& arch, const ContextParams& cp) {
  ComputeEstimate ce;
  const Hparams& hp = arch.hp;
  const int64_t T = std::min<int64_t>(cp.n_ubatch, cp.n_batch);
  const int64_t n_ctx = Pad(std::max<int64_t>(cp.n_ctx, 1), 256);
  uint32_t max_head = 0;
  int64_t swa_cells = 0;
  bool any_full = false;
  for (const auto& L : arch.layers) {
    if (!L.has_kv) continue;
    max_head = std::max(max_head, L.n_head);
    if (L.attention == AttentionKind::kSlidingWindow || L.attention == AttentionKind::kChunked) {
      const int64_t want =
          static_cast<int64_t>(L.window) * (cp.kv_unified ? std::max(1, cp.n_seq) : 1) +
          cp.n_ubatch;
      swa_cells = std::max(swa_cells, cp.swa_full ? n_ctx : Pad(std::min(n_ctx, want), 256));
    } else {
      any_full = true;
    }
  }
  // src/llama-graph.cpp build_attn_inp_kq_mask: one mask per cache (full, SWA),
  // cast to f16 for flash attention.
  const int64_t mask_elem = cp.flash_attn ? 2 : 4;
  ce.masks = ((any_full ? n_ctx : 0) + swa_cells) * T * mask_elem;
  if (!cp.flash_attn) ce.scores = n_ctx * T * max_head * 4;
  const int64_t hidden = int64_t{hp.n_embd} * T * 4;
  ce.logits = int64_t{hp.n_vocab} * T * 4 + hidden;
  if (hp.n_expert > 0) {
    // ggml_mul_mat_id outputs: gate and up [n_ff_exp, k, T], down [n_embd, k, T]
    // (f32), plus the residual. Biased experts (gpt-oss) keep the biased copies
    // and the activation alive too.
    const int64_t k = std::max<uint32_t>(hp.n_expert_used, 1);
    ce.ffn = hp.expert_bias ? T * k * (3 * int64_t{hp.n_ff_exp} + 2 * hp.n_embd) * 4
                            : T * k * (2 * int64_t{hp.n_ff_exp} + hp.n_embd) * 4 + hidden;
  }
  const bool any_dense = std::any_of(arch.layers.begin(), arch.layers.end(),
                                     [](const LayerInfo& l) { return !l.moe; });
  if (hp.n_ff > 0 && any_dense)
    ce.ffn = std::max(ce.ffn, T * (2 * int64_t{hp.n_ff} + hp.n_embd) * 4 + hidden);
  // Gated DeltaNet: q/k/v/gate projections [d_inner, T] f32 plus the conv input.
  if (hp.ssm_d_inner) ce.recurrent = int64_t{hp.ssm_d_inner} * T * 4 * 4 + hidden;
  return ce;
}

}  // namespace moetune
