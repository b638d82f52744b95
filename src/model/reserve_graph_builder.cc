#include "model/reserve_graph_builder.h"

#include <fmt/format.h>

#include <algorithm>

#include "gguf/ggml_type.h"

namespace moetune {

ReserveGraphBuilder::ReserveGraphBuilder(const GgufModel& model, const ModelArch& arch,
                                         const std::unordered_map<std::string_view, size_t>& index,
                                         const ContextParams& cp, const ContextLayout& layout,
                                         const WeightPlacement& placement)
    : model_(model),
      arch_(arch),
      hp_(arch.hp),
      cp_(cp),
      layout_(layout),
      placement_(placement),
      tensor_index_(index) {
  host_ = placement.DeviceCount();
  n_layer_ = static_cast<int>(arch.layers.size());
  T_ = layout.reserve_tokens;
  n_seqs_ = layout.reserve_seqs;
  arch_name_ = hp_.arch;
  const Metadata& md = model.metadata();
  const std::string p = arch_name_ + ".";
  // build_moe_ffn's gating per model (src/models/*.cpp): the file's
  // expert_gating_func where the model reads it (1 softmax, 2 sigmoid).
  const uint64_t gating_func = md.GetUint(p + "expert_gating_func").value_or(0);
  if (arch_name_ == "gpt-oss") {
    gating_ = Gating::kSoftmaxWeight;
  } else if (arch_name_ == "llama4" || gating_func == 2 ||
             (arch_name_ == "glm4moe" && gating_func == 0)) {
    gating_ = Gating::kSigmoid;
  }
  norm_w_ = arch_name_ == "qwen3moe" || arch_name_ == "qwen35moe" || arch_name_ == "qwen3next" ||
            arch_name_ == "llama" ||
            ((arch_name_ == "deepseek2" || arch_name_ == "glm4moe") &&
             md.GetBool(p + "expert_weights_norm").value_or(false));
  w_scale_ = static_cast<float>(md.GetFloat(p + "expert_weights_scale").value_or(0.0));
}

std::string ReserveGraphBuilder::fmt_name(int il, const char* kind, const char* suffix) {
  return il >= 0 ? fmt::format("blk.{}.{}.{}", il, kind, suffix)
                 : fmt::format("{}.{}", kind, suffix);
}

int ReserveGraphBuilder::Buffer(int device) const { return device >= 0 ? device : host_; }

int ReserveGraphBuilder::LayerDevice(int il) const {
  return Buffer(placement_.LayerDevice(il, n_layer_));
}

bool ReserveGraphBuilder::Swa(int il) const {
  const auto k = arch_.layers[static_cast<size_t>(il)].attention;
  return k == AttentionKind::kSlidingWindow || k == AttentionKind::kChunked;
}

SimType ReserveGraphBuilder::CacheType(uint32_t t) const {
  return t == ggml_type::kF32 ? SimType::kF32 : SimType::kF16;
}

SimGraph::Id ReserveGraphBuilder::W(const std::string& name, int il) {
  if (auto it = weights_.find(name); it != weights_.end()) return it->second;
  auto idx = tensor_index_.find(name);
  if (idx == tensor_index_.end()) return -1;
  const TensorInfo& t = model_.tensors[idx->second];
  SimNe ne{1, 1, 1, 1};
  for (size_t i = 0; i < t.ne.size() && i < 4; ++i) ne[i] = std::max<int64_t>(t.ne[i], 1);
  const TensorRole role = il >= 0 ? ClassifyTensor(name, false).role : TensorRole::kOther;
  const int dev = Buffer(placement_.TensorDevice(name, il, n_layer_, role));
  const Id id =
      g_.Weight(ne, static_cast<int64_t>(std::min<uint64_t>(t.n_bytes, INT64_MAX / 4)), dev, name);
  weights_[name] = id;
  return id;
}

// --- inputs ----------------------------------------------------------------

SimGraph::Id ReserveGraphBuilder::InpPos() {
  // build_inp_pos: n_tokens * n_pos_per_embd (4 for the M-RoPE of Qwen3.5 / Qwen3-Next).
  const int64_t per = arch_name_ == "qwen35moe" || arch_name_ == "qwen35" ? 4 : 1;
  if (inp_pos_ < 0) inp_pos_ = g_.Input(SimType::kI32, {T_ * per, 1, 1, 1}, "inp_pos");
  return inp_pos_;
}

SimGraph::Id ReserveGraphBuilder::OutIds() {
  // build_inp_out_ids: the rows that produce logits (n_outputs of the reserve).
  if (out_ids_ < 0)
    out_ids_ = g_.Input(SimType::kI32, {layout_.reserve_outputs, 1, 1, 1}, "out_ids");
  return out_ids_;
}

SimGraph::Id ReserveGraphBuilder::AttnScale() {
  if (attn_scale_ < 0) attn_scale_ = g_.Input(SimType::kF32, {1, 1, T_, 1}, "inp_attn_scale");
  return attn_scale_;
}

// build_attn_inp_kv (+ _iswa): per cache, the row indices the new K and V go
// to (V transposed without flash attention: one index per value) and the KQ
// mask [n_kv, n_tokens/n_stream, 1, n_stream], f16 with flash attention.
ReserveGraphBuilder::KvInputs& ReserveGraphBuilder::Kv(bool swa, int64_t window,
                                                       int64_t n_embd_v_gqa) {
  KvInputs& in = kv_[swa ? 1 : 0];
  if (in.mask >= 0) return in;
  const int64_t ns = layout_.n_stream;
  const int64_t n_kv = swa ? layout_.SwaCells(window, cp_.swa_full) : layout_.n_ctx_seq;
  in.k_idxs = g_.Input(SimType::kI64, {T_, 1, 1, 1}, "attn_inp_k_idxs");
  const int64_t v_rows = cp_.flash_attn ? T_ : T_ * std::max<int64_t>(n_embd_v_gqa, 1);
  in.v_idxs = g_.Input(SimType::kI64, {v_rows, 1, 1, 1}, "attn_inp_v_idxs");
  in.mask = g_.Input(cp_.flash_attn ? SimType::kF16 : SimType::kF32, {n_kv, T_ / ns, 1, ns},
                     swa ? "attn_inp_kq_mask_swa" : "attn_inp_kq_mask");
  return in;
}

SimGraph::Id ReserveGraphBuilder::RsCopy() {
  if (rs_copy_ < 0) rs_copy_ = g_.Input(SimType::kI32, {layout_.n_seq, 1, 1, 1}, "rs_s_copy");
  return rs_copy_;
}

// --- blocks ----------------------------------------------------------------

// build_inp_embd: the token rows of token_embd (CPU), and the embedding-input
// path ggml_build_forward_select keeps in the graph (inp_mixed_*).
SimGraph::Id ReserveGraphBuilder::Embd() {
  const Id tok = W("token_embd.weight");
  const int64_t n_embd = hp_.n_embd;
  const Id tokens = g_.Input(SimType::kI32, {T_, 1, 1, 1}, "inp_tokens");
  const Id embd = tok >= 0
                      ? g_.GetRows(tok, tokens, "embd")
                      : g_.New(SimOp::kOther, SimType::kF32, {n_embd, T_, 1, 1}, {tokens}, "embd");
  g_.Expand(embd);
  // The embeddings input of the other path (ggml_build_forward_select visits
  // both): a leaf nobody reads, so it is allocated first and never freed.
  g_.Expand(g_.Input(SimType::kF32, {n_embd, T_, 1, 1}, "inp_embd"));
  if (tok >= 0) {
    const Id mixed_tokens = g_.Input(SimType::kI32, {T_, 1, 1, 1}, "inp_mixed_tokens");
    const Id rows = g_.GetRows(tok, mixed_tokens, "inp_mixed_rows");
    const Id mixed = g_.Input(SimType::kF32, {n_embd, T_, 1, 1}, "inp_mixed_embd");
    const Id dup = g_.Cont(mixed, "inp_mixed_dup");
    const Id slots = g_.Input(SimType::kI64, {T_, 1, 1, 1}, "inp_mixed_slots");
    g_.Expand(g_.CopyInto(dup, {rows, slots}, "inp_mixed_set"));
  }
  return embd;
}

// build_norm: rms_norm (a new tensor) times the weight (in place).
SimGraph::Id ReserveGraphBuilder::Norm(Id x, Id w, const std::string& name) {
  Id cur = g_.Inplace({x}, name + "_rms");
  if (w >= 0) cur = g_.Inplace({cur, w}, name);
  return cur;
}

SimGraph::Id ReserveGraphBuilder::Linear(Id w, Id x, Id bias, const std::string& name) {
  Id cur = g_.MulMat(w, x, name);
  if (bias >= 0) cur = g_.Inplace({cur, bias}, name + "_b");
  return cur;
}

// cpy_k / cpy_v (src/llama-kv-cache.cpp): ggml_set_rows into the layer's cache.
ReserveGraphBuilder::KvCaches ReserveGraphBuilder::StoreKv(int il, Id k, Id v, bool swa,
                                                           int64_t n_embd_v_gqa) {
  const LayerInfo& L = arch_.layers[static_cast<size_t>(il)];
  KvInputs& in = Kv(swa, L.window, n_embd_v_gqa);
  KvCaches out;
  const int dev = LayerDevice(il);
  const int64_t cells = swa ? layout_.SwaCells(L.window, cp_.swa_full) : layout_.n_ctx_seq;
  const Id kc = g_.Cache(CacheType(cp_.type_k),
                         {std::max<int64_t>(L.n_embd_k_gqa, 1), cells, layout_.n_stream, 1}, dev,
                         fmt::format("cache_k_l{}", il));
  out.k = kc;
  const Id kview = g_.Reshape(k, {g_.t(k).ne[0] * g_.t(k).ne[1], T_, 1, 1});
  g_.Expand(g_.CopyInto(kc, {kview, in.k_idxs}, fmt::format("cache_k_l{} (set)", il)));
  if (v < 0) return out;
  const Id vc = g_.Cache(CacheType(cp_.type_v),
                         {std::max<int64_t>(n_embd_v_gqa, 1), cells, layout_.n_stream, 1}, dev,
                         fmt::format("cache_v_l{}", il));
  out.v = vc;
  const Id vview = g_.Reshape(v, {g_.t(v).ne[0] * g_.t(v).ne[1], T_, 1, 1});
  g_.Expand(g_.CopyInto(vc, {vview, in.v_idxs}, fmt::format("cache_v_l{} (set)", il)));
  return out;
}

// build_attn_mha: flash attention, or KQ -> softmax -> KQV (one stream per
// sequence without -kvu: q and the cache views gain a stream dimension).
SimGraph::Id ReserveGraphBuilder::Mha(int il, Id q, Id k, Id v, Id v_mla, Id sinks,
                                      const KvInputs& in) {
  const int64_t ns = layout_.n_stream;
  const SimNe qn = g_.t(q).ne;  // [head_dim, n_head, T]
  const Id q4 = g_.Reshape(q, {qn[0], qn[1], T_ / ns, ns});
  const Id qp = g_.Permute(q4, 0, 2, 1, 3, g_.t(q).name + " (permuted)");
  const int64_t n_kv = g_.t(in.mask).ne[0];
  const int64_t hd_k = g_.t(k).ne[0], n_head_kv = g_.t(k).ne[1];
  const int64_t hd_v = g_.t(v).ne[0];
  const Id kv = g_.View(k, {hd_k, n_head_kv, n_kv, ns},
                        {2, 2 * hd_k, 2 * hd_k * n_head_kv, 2 * hd_k * n_head_kv * n_kv}, 0);
  const Id kp = g_.Permute(kv, 0, 2, 1, 3);
  Id cur;
  if (cp_.flash_attn) {
    const Id vv = g_.View(v, {hd_v, n_head_kv, n_kv, ns},
                          {2, 2 * hd_v, 2 * hd_v * n_head_kv, 2 * hd_v * n_head_kv * n_kv}, 0);
    const Id vp = g_.Permute(vv, 0, 2, 1, 3);
    cur = g_.FlashAttn(qp, kp, vp, in.mask, sinks, fmt::format("fattn-{}", il));
    if (v_mla >= 0) {
      // [kv_lora, n_head, T] -> per head through wv_b -> [v_head, n_head, T]
      const Id perm = g_.Permute(cur, 0, 2, 1, 3);
      cur = g_.MulMat(v_mla, perm, fmt::format("fattn_mla-{}", il));
      cur = g_.Cont(g_.Permute(cur, 0, 2, 1, 3), fmt::format("fattn_mla_cont-{}", il));
    }
    const SimNe o = g_.t(cur).ne;
    return g_.Reshape(cur, {o[0] * o[1], o[2] * o[3], 1, 1}, fmt::format("kqv_out-{}", il));
  }
  Id kq = g_.MulMat(kp, qp, fmt::format("kq-{}", il));  // [n_kv, T/ns, n_head, ns]
  std::vector<Id> srcs = {kq, in.mask};
  if (sinks >= 0) srcs.push_back(sinks);
  kq = g_.Inplace(srcs, fmt::format("kq_soft_max-{}", il));
  Id vt;
  if (v_mla >= 0) {
    // MLA keeps V untransposed in the K cache: ggml_cont(ggml_transpose(v)).
    const Id vv = g_.View(v, {hd_v, n_kv, n_head_kv, ns},
                          {2, 2 * hd_k, 2 * hd_k * n_kv, 2 * hd_k * n_kv * n_head_kv}, 0);
    vt = g_.Cont(g_.Transpose(vv), fmt::format("v_cont-{}", il));
  } else {
    vt = g_.View(v, {n_kv, hd_v, n_head_kv, ns},
                 {2, 2 * n_kv, 2 * n_kv * hd_v, 2 * n_kv * hd_v * n_head_kv}, 0);
  }
  Id kqv = g_.MulMat(vt, kq, fmt::format("kqv-{}", il));  // [hd_v, T/ns, n_head, ns]
  if (v_mla >= 0) kqv = g_.MulMat(v_mla, kqv, fmt::format("kqv_mla-{}", il));
  const Id perm = g_.Permute(kqv, 0, 2, 1, 3);
  const SimNe pn = g_.t(perm).ne;
  return g_.New(SimOp::kOther, SimType::kF32, {pn[0] * pn[1], pn[2] * pn[3], 1, 1}, {perm},
                fmt::format("kqv_out-{}", il));
}

// Q/K/V of the llama-style models (src/models/{llama,qwen2,qwen3,qwen3moe,
// openai-moe,glm4-moe,llama4,qwen35moe}.cpp), then build_attn: Q, V and K are
// expanded in that order, K and V are stored, attention, output projection.
SimGraph::Id ReserveGraphBuilder::Attn(int il, Id cur) {
  const LayerInfo& L = arch_.layers[static_cast<size_t>(il)];
  const int64_t n_head = std::max<uint32_t>(L.n_head, 1);
  const int64_t n_head_kv = std::max<uint32_t>(L.n_head_kv, 1);
  const int64_t hd = std::max<int64_t>(L.n_embd_k_gqa / n_head_kv, 1);
  const int64_t hd_v = std::max<int64_t>(L.n_embd_v_gqa / n_head_kv, 1);
  const bool swa = Swa(il);
  const bool gated_q =
      arch_name_ == "qwen35moe" || arch_name_ == "qwen35" || arch_name_ == "qwen3next";
  Id wq = Wl(il, "attn_q");
  Id q_full = -1, gate = -1;
  Id q = wq >= 0 ? Linear(wq, cur, Wl(il, "attn_q", "bias"), fmt::format("Qcur-{}", il))
                 : g_.New(SimOp::kOther, SimType::kF32, {hd * n_head, T_, 1, 1}, {cur},
                          fmt::format("Qcur-{}", il));
  if (gated_q) {
    // One projection gives the query and a gate, interleaved per head.
    q_full = q;
    q = g_.View(q_full, {hd, n_head, T_, 1}, {kF32, 2 * hd * kF32, 2 * hd * n_head * kF32, 0}, 0,
                fmt::format("Qcur_reshaped-{}", il));
    gate = g_.View(q_full, {hd, n_head, T_, 1}, {kF32, 2 * hd * kF32, 2 * hd * n_head * kF32, 0},
                   hd * kF32, fmt::format("gate_view-{}", il));
  } else {
    q = g_.Reshape(q, {hd, n_head, T_, 1});
  }
  Id k = Linear(Wl(il, "attn_k"), cur, Wl(il, "attn_k", "bias"), fmt::format("Kcur-{}", il));
  k = g_.Reshape(k, {hd, n_head_kv, T_, 1});
  Id v = Linear(Wl(il, "attn_v"), cur, Wl(il, "attn_v", "bias"), fmt::format("Vcur-{}", il));
  v = g_.Reshape(v, {hd_v, n_head_kv, T_, 1});
  const Id q_norm = Wl(il, "attn_q_norm"), k_norm = Wl(il, "attn_k_norm");
  if (q_norm >= 0) q = Norm(q, q_norm, fmt::format("Qcur_normed-{}", il));
  if (k_norm >= 0) k = Norm(k, k_norm, fmt::format("Kcur_normed-{}", il));
  // llama4: NoPE on every 4th layer (with the attention temperature), RoPE and
  // an unweighted RMS norm of Q and K elsewhere.
  const bool nope = arch_name_ == "llama4" && (il + 1) % 4 == 0;
  if (!nope) {
    q = g_.Rope(q, InpPos(), fmt::format("Qcur_rope-{}", il));
    k = g_.Rope(k, InpPos(), fmt::format("Kcur_rope-{}", il));
  }
  if (arch_name_ == "llama4" && !nope) {
    q = g_.Inplace({q}, fmt::format("Qcur_l2-{}", il));
    k = g_.Inplace({k}, fmt::format("Kcur_l2-{}", il));
  }
  if (nope) q = g_.Inplace({q, AttnScale()}, fmt::format("Qcur_scaled-{}", il));
  g_.Expand(q);
  g_.Expand(v);
  g_.Expand(k);
  const KvCaches caches = StoreKv(il, k, v, swa, L.n_embd_v_gqa);
  const int64_t cells = g_.t(caches.k).ne[1];
  const Id kc4 = g_.Reshape(caches.k, {hd, n_head_kv, cells, layout_.n_stream});
  const Id vc4 = g_.Reshape(caches.v, {hd_v, n_head_kv, cells, layout_.n_stream});
  Id out = Mha(il, q, kc4, vc4, -1, Wl(il, "attn_sinks"), Kv(swa, L.window, L.n_embd_v_gqa));
  if (gated_q) {
    const Id g = g_.New(SimOp::kOther, SimType::kF32, {hd * n_head, T_, 1, 1}, {gate},
                        fmt::format("gate_reshaped-{}", il));
    out = g_.Inplace({out, g_.Inplace({g}, fmt::format("gate_sigmoid-{}", il))},
                     fmt::format("attn_gated-{}", il));
  }
  return Linear(Wl(il, "attn_output"), out, Wl(il, "attn_output", "bias"),
                fmt::format("attn_out-{}", il));
}

// deepseek2 multi-head latent attention with the absorbed wk_b / wv_b
// (src/models/deepseek2.cpp): the cache holds kv_lora_rank + rope values per
// token, V is a view of it.
SimGraph::Id ReserveGraphBuilder::AttnMla(int il, Id cur) {
  const LayerInfo& L = arch_.layers[static_cast<size_t>(il)];
  const int64_t n_head = std::max<uint32_t>(L.n_head, 1);
  const int64_t kv_lora = std::max<uint32_t>(hp_.kv_lora_rank, 1);
  const int64_t rope = std::max<int64_t>(L.n_embd_k_gqa - kv_lora, 1);
  Id q;
  if (const Id wq_a = Wl(il, "attn_q_a"); wq_a >= 0) {
    q = g_.MulMat(wq_a, cur, fmt::format("q_a-{}", il));
    q = Norm(q, Wl(il, "attn_q_a_norm"), fmt::format("q_a_norm-{}", il));
    q = g_.MulMat(Wl(il, "attn_q_b"), q, fmt::format("q-{}", il));
  } else {
    q = g_.MulMat(Wl(il, "attn_q"), cur, fmt::format("q-{}", il));
  }
  const int64_t qk = g_.t(q).ne[0] / n_head;  // nope + rope per head
  const int64_t nope = std::max<int64_t>(qk - rope, 1);
  const Id q_nope = g_.View(q, {nope, n_head, T_, 1}, {kF32, qk * kF32, qk * n_head * kF32, 0}, 0);
  Id q_pe =
      g_.View(q, {rope, n_head, T_, 1}, {kF32, qk * kF32, qk * n_head * kF32, 0}, nope * kF32);
  const Id kv_pe = g_.MulMat(Wl(il, "attn_kv_a_mqa"), cur, fmt::format("kv_cmpr_pe-{}", il));
  const int64_t kv_w = g_.t(kv_pe).ne[0];
  Id kv = g_.View(kv_pe, {kv_lora, T_, 1, 1}, {kF32, kv_w * kF32, 0, 0}, 0);
  Id k_pe = g_.View(kv_pe, {rope, 1, T_, 1}, {kF32, kv_w * kF32, kv_w * kF32, 0}, kv_lora * kF32);
  q_pe = g_.Rope(q_pe, InpPos(), fmt::format("q_pe-{}", il));
  k_pe = g_.Rope(k_pe, InpPos(), fmt::format("k_pe-{}", il));
  kv = Norm(kv, Wl(il, "attn_kv_a_norm"), fmt::format("kv_cmpr-{}", il));
  const Id wk_b = Wl(il, "attn_k_b");
  const Id qp = g_.Permute(q_nope, 0, 2, 1, 3);
  Id absorbed = wk_b >= 0 ? g_.MulMat(wk_b, qp, fmt::format("q_nope_absorbed-{}", il))
                          : g_.New(SimOp::kOther, SimType::kF32, {kv_lora, T_, n_head, 1}, {qp},
                                   fmt::format("q_nope_absorbed-{}", il));
  absorbed = g_.Permute(absorbed, 0, 2, 1, 3);
  const Id qcur = g_.Concat(absorbed, q_pe, 0, fmt::format("Qcur-{}", il));
  const Id vcur = g_.Reshape(kv, {kv_lora, 1, T_, 1}, fmt::format("Vcur-{}", il));
  const Id kcur = g_.Concat(vcur, k_pe, 0, fmt::format("Kcur-{}", il));
  g_.Expand(qcur);
  g_.Expand(vcur);
  g_.Expand(kcur);
  const Id k_cache = StoreKv(il, kcur, -1, false, 0).k;
  const int64_t kw = kv_lora + rope;
  const Id kc4 = g_.Reshape(k_cache, {kw, 1, layout_.n_ctx_seq, layout_.n_stream});
  const Id vc4 = g_.View(k_cache, {kv_lora, 1, layout_.n_ctx_seq, layout_.n_stream},
                         {2, 2 * kw, 2 * kw, 2 * kw * layout_.n_ctx_seq}, 0);
  const Id out = Mha(il, qcur, kc4, vc4, Wl(il, "attn_v_b"), -1, Kv(false, 0, kv_lora));
  return Linear(Wl(il, "attn_output"), out, -1, fmt::format("attn_out-{}", il));
}

SimGraph::Id ReserveGraphBuilder::Output(Id cur) {
  cur = Norm(cur, W("output_norm.weight"), "result_norm");
  Id w = W("output.weight");
  if (w < 0) {
    // Tied head: llama.cpp loads token_embd again as the output on the
    // output layer's device (TENSOR_DUPLICATED).
    const Id tok = W("token_embd.weight");
    if (tok < 0) return cur;
    const SimTensor& t = g_.t(tok);
    w = g_.Weight(t.ne, t.nbytes, Buffer(placement_.OutputDevice(n_layer_)),
                  "output.weight (token_embd)");
  }
  const Id logits = g_.MulMat(w, cur, "result_output");
  g_.SetOutput(logits);
  g_.Expand(logits);
  return logits;
}

Result<SimGraph> ReserveGraphBuilder::Build(const std::vector<int>& layers) {
  if (layers.empty()) return Error(ErrorKind::kFormat, "the model has no layers to build");
  last_layer_ = layers.back();
  Id inpL = Embd();
  for (int il : layers) {
    const LayerInfo& L = arch_.layers[static_cast<size_t>(il)];
    const Id inpSA = inpL;
    Id cur = Norm(inpL, Wl(il, "attn_norm"), fmt::format("attn_norm-{}", il));
    g_.Expand(cur);
    switch (L.attention) {
      case AttentionKind::kRecurrent:
        cur = DeltaNet(il, cur);
        break;
      case AttentionKind::kMla:
        cur = AttnMla(il, cur);
        break;
      case AttentionKind::kNone:
        break;
      default:
        cur = Attn(il, cur);
        break;
    }
    Id residual = inpSA;
    if (il == last_layer_) {
      // Only the rows that are outputs go on (build_inp_out_ids).
      cur = g_.GetRows(cur, OutIds(), "out_rows");
      residual = g_.GetRows(residual, OutIds(), "out_rows_residual");
    }
    const Id ffn_inp = g_.Inplace({cur, residual}, fmt::format("ffn_inp-{}", il));
    Id post = Wl(il, "ffn_norm");
    if (post < 0) post = Wl(il, "post_attention_norm");
    const Id x = Norm(ffn_inp, post, fmt::format("ffn_norm-{}", il));
    Id ffn_out;
    if (L.moe && Wl(il, "ffn_gate_inp") >= 0) {
      ffn_out = SharedExperts(il, x, Moe(il, x));
    } else {
      ffn_out = Ffn(il, x, "ffn_up", "ffn_gate", "ffn_down", "ffn");
    }
    inpL = g_.Inplace({ffn_out, ffn_inp}, fmt::format("l_out-{}", il));
  }
  Output(inpL);
  if (g_.overflowed())
    return Error(ErrorKind::kInvalidArgument,
                 "a compute tensor's size overflows 64 bits: the model's dimensions or the "
                 "context and micro-batch are implausible");
  return std::move(g_);
}

}  // namespace moetune
