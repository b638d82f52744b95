// The feed-forward and recurrent blocks of the reserve graph: dense FFN, the MoE
// experts and their shared experts, and Gated DeltaNet. The inputs, attention and
// output are in reserve_graph_builder.cc: one class in two files, each readable.
#include <fmt/format.h>

#include <algorithm>

#include "gguf/ggml_type.h"
#include "model/reserve_graph_builder.h"

namespace moetune {

// build_ffn with a SiLU-gated (SWIGLU) up/gate/down.
SimGraph::Id ReserveGraphBuilder::Ffn(int il, Id x, const char* up, const char* gate,
                                      const char* down, const char* name) {
  const Id wu = Wl(il, up), wg = Wl(il, gate), wd = Wl(il, down);
  if (wu < 0 || wd < 0) return x;
  const Id u = g_.MulMat(wu, x, fmt::format("{}_up-{}", name, il));
  Id a = u;
  if (wg >= 0) {
    const Id gt = g_.MulMat(wg, x, fmt::format("{}_gate-{}", name, il));
    a = g_.New(SimOp::kOther, SimType::kF32, g_.t(gt).ne, {gt, u},
               fmt::format("{}_swiglu-{}", name, il));
  } else {
    a = g_.Inplace({u}, fmt::format("{}_act-{}", name, il));
  }
  return g_.MulMat(wd, a, fmt::format("{}_out-{}", name, il));
}

// build_moe_ffn: router, top-k selection, the expert weights, gate/up/down
// through ggml_mul_mat_id ([n_ff, k, T] and [n_embd, k, T]), the weighting,
// and the sum over the k views.
SimGraph::Id ReserveGraphBuilder::Moe(int il, Id x) {
  const int64_t n_embd = g_.t(x).ne[0];
  const int64_t T = g_.t(x).ne[1];  // the ubatch, or only its outputs in the last layer
  const int64_t k = std::max<uint32_t>(hp_.n_expert_used, 1);
  const int64_t n_expert = std::max<uint32_t>(hp_.n_expert, 1);
  Id logits = g_.MulMat(Wl(il, "ffn_gate_inp"), x, fmt::format("ffn_moe_logits-{}", il));
  if (const Id b = Wl(il, "ffn_gate_inp", "bias"); b >= 0)
    logits = g_.Inplace({logits, b}, fmt::format("ffn_moe_logits_biased-{}", il));
  Id probs = logits;
  if (gating_ == Gating::kSoftmax || gating_ == Gating::kSigmoid)
    probs = g_.Inplace({logits}, fmt::format("ffn_moe_probs-{}", il));
  Id selection = probs;
  if (const Id b = Wl(il, "exp_probs_b", "bias"); b >= 0)
    selection = g_.Inplace({probs, b}, fmt::format("ffn_moe_probs_biased-{}", il));
  if (arch_name_ == "llama4") selection = logits;
  const Id argsort = g_.New(SimOp::kOther, SimType::kI32, {n_expert, T, 1, 1}, {selection},
                            fmt::format("ffn_moe_argsort-{}", il));
  const Id topk = g_.View(argsort, {k, T, 1, 1}, {4, n_expert * 4, 0, 0}, 0,
                          fmt::format("ffn_moe_topk-{}", il));
  Id weights = g_.GetRows(g_.Reshape(probs, {1, n_expert, T, 1}), topk,
                          fmt::format("ffn_moe_weights-{}", il));
  if (gating_ == Gating::kSoftmaxWeight) {
    weights = g_.Inplace({g_.Reshape(weights, {k, T, 1, 1})},
                         fmt::format("ffn_moe_weights_softmax-{}", il));
    weights = g_.Reshape(weights, {1, k, T, 1});
  }
  if (norm_w_) {
    const Id w2 = g_.Reshape(weights, {k, T, 1, 1});
    Id sum = g_.New(SimOp::kOther, SimType::kF32, {1, T, 1, 1}, {w2},
                    fmt::format("ffn_moe_weights_sum-{}", il));
    sum = g_.Inplace({sum}, fmt::format("ffn_moe_weights_sum_clamped-{}", il));
    weights = g_.Inplace({w2, sum}, fmt::format("ffn_moe_weights_norm-{}", il));
    weights = g_.Reshape(weights, {1, k, T, 1});
  }
  if (w_scale_ != 0.0f && w_scale_ != 1.0f)
    weights = g_.Inplace({weights}, fmt::format("ffn_moe_weights_scaled-{}", il));
  g_.Expand(weights);
  Id cur = g_.Reshape(x, {n_embd, 1, T, 1});
  const bool weight_before = arch_name_ == "llama4";
  if (weight_before) {
    const Id rep = g_.New(SimOp::kOther, SimType::kF32, {n_embd, k, T, 1}, {cur},
                          fmt::format("ffn_moe_repeat-{}", il));
    cur = g_.Inplace({rep, weights}, fmt::format("ffn_moe_weighted-{}", il));
  }
  Id up, gate = -1;
  if (const Id gu = Wl(il, "ffn_gate_up_exps"); gu >= 0) {
    const Id both = g_.MulMatId(gu, cur, topk, fmt::format("ffn_moe_gate_up-{}", il));
    const int64_t n_ff = g_.t(both).ne[0] / 2;
    const SimNe nb = g_.t(both).nb;
    gate = g_.View(both, {n_ff, k, T, 1}, nb, 0);
    up = g_.View(both, {n_ff, k, T, 1}, nb, n_ff * kF32);
  } else {
    up = g_.MulMatId(Wl(il, "ffn_up_exps"), cur, topk, fmt::format("ffn_moe_up-{}", il));
    if (const Id b = Wl(il, "ffn_up_exps", "bias"); b >= 0)
      up = g_.Inplace({up, b, topk}, fmt::format("ffn_moe_up_biased-{}", il));
    if (const Id wg = Wl(il, "ffn_gate_exps"); wg >= 0) {
      gate = g_.MulMatId(wg, cur, topk, fmt::format("ffn_moe_gate-{}", il));
      if (const Id b = Wl(il, "ffn_gate_exps", "bias"); b >= 0)
        gate = g_.Inplace({gate, b, topk}, fmt::format("ffn_moe_gate_biased-{}", il));
    }
  }
  const Id act = gate >= 0 ? g_.New(SimOp::kOther, SimType::kF32, g_.t(up).ne, {gate, up},
                                    fmt::format("ffn_moe_swiglu-{}", il))
                           : g_.Inplace({up}, fmt::format("ffn_moe_silu-{}", il));
  Id experts = g_.MulMatId(Wl(il, "ffn_down_exps"), act, topk, fmt::format("ffn_moe_down-{}", il));
  if (const Id b = Wl(il, "ffn_down_exps", "bias"); b >= 0)
    experts = g_.Inplace({experts, b, topk}, fmt::format("ffn_moe_down_biased-{}", il));
  if (!weight_before)
    experts = g_.Inplace({experts, weights}, fmt::format("ffn_moe_weighted-{}", il));
  g_.Expand(experts);
  return MoeSum(il, experts, n_embd, T, k);
}

// The sum of the k weighted expert outputs ([n_embd, k, T]) over their k
// views, as build_moe_ffn adds them.
SimGraph::Id ReserveGraphBuilder::MoeSum(int il, Id experts, int64_t n_embd, int64_t T, int64_t k) {
  const SimNe enb = g_.t(experts).nb;
  std::vector<Id> views;
  for (int64_t i = 0; i < k; ++i) {
    views.push_back(g_.View(experts, {n_embd, T, 1, 1}, {enb[0], enb[2], 0, 0}, i * enb[1]));
    g_.Expand(views.back());
  }
  Id out = views[0];
  for (int64_t i = 1; i < k; ++i) {
    out = g_.Inplace({out, views[static_cast<size_t>(i)]}, fmt::format("ffn_moe_sum-{}", il));
    g_.Expand(out);
  }
  if (k == 1) out = g_.Cont(out, fmt::format("ffn_moe_out-{}", il));
  return out;
}

// The shared expert(s), gated by a sigmoid in Qwen3.5 / Qwen3-Next / Qwen2-MoE.
SimGraph::Id ReserveGraphBuilder::SharedExperts(int il, Id x, Id moe_out) {
  if (Wl(il, "ffn_up_shexp") < 0) return moe_out;
  Id sh = Ffn(il, x, "ffn_up_shexp", "ffn_gate_shexp", "ffn_down_shexp", "ffn_shexp");
  if (const Id gate_inp = Wl(il, "ffn_gate_inp_shexp"); gate_inp >= 0) {
    Id g = g_.MulMat(gate_inp, x, fmt::format("shared_expert_gate-{}", il));
    g = g_.Inplace({g}, fmt::format("shared_expert_gate_sigmoid-{}", il));
    sh = g_.Inplace({sh, g}, fmt::format("ffn_shexp_gated-{}", il));
  }
  return g_.Inplace({moe_out, sh}, fmt::format("ffn_out-{}", il));
}

// Gated DeltaNet (src/models/qwen35moe.cpp build_layer_attn_linear,
// src/models/qwen3next.cpp, llama-graph.cpp build_rs): conv and SSM states of
// this ubatch's sequences, the qkv projection and its causal convolution, the
// delta rule (ggml_gated_delta_net: the output plus the new state), the
// gated norm and the output projection.
SimGraph::Id ReserveGraphBuilder::DeltaNet(int il, Id cur) {
  const int64_t d_conv = std::max<uint32_t>(hp_.ssm_d_conv, 1);
  const int64_t head_k = std::max<uint32_t>(hp_.ssm_d_state, 1);
  const int64_t n_k_heads = std::max<uint32_t>(hp_.ssm_n_group, 1);
  const int64_t d_inner = std::max<uint32_t>(hp_.ssm_d_inner, 1);
  const int64_t head_v = head_k;
  const int64_t n_v_heads = std::max<int64_t>(d_inner / head_v, 1);
  const int64_t channels = d_inner + 2 * n_k_heads * head_k;
  const int64_t n_seq_tokens = T_ / n_seqs_;
  const int dev = LayerDevice(il);
  const bool next = arch_name_ == "qwen3next";
  // build_rs: the conv states of the ubatch's sequences, gathered from the cache.
  const Id r_cache = g_.Cache(SimType::kF32, {(d_conv - 1) * channels, layout_.n_seq, 1, 1}, dev,
                              fmt::format("cache_r_l{}", il));
  const Id s_cache = g_.Cache(SimType::kF32, {head_v * head_v * n_v_heads, layout_.n_seq, 1, 1},
                              dev, fmt::format("cache_s_l{}", il));
  const Id copy_main = g_.View(RsCopy(), {n_seqs_, 1, 1, 1}, {4, 4 * n_seqs_, 0, 0}, 0);
  const Id conv_states = g_.GetRows(r_cache, copy_main, fmt::format("conv_states-{}", il));
  g_.Expand(g_.CopyInto(r_cache, {g_.View(conv_states, {1, 1, 1, 1}, {4, 4, 4, 4}, 0)},
                        fmt::format("cache_r_l{} (extra)", il)));
  const DeltaNetHeads heads{head_k, n_k_heads, head_v, n_v_heads};
  Id mixed = -1;
  const Id qkv = DeltaNetQkv(il, cur, heads, &mixed);
  const Id qkv_t = g_.Transpose(g_.Reshape(qkv, {g_.t(qkv).ne[0], n_seq_tokens, n_seqs_, 1}));
  const Id states3 = g_.Reshape(conv_states, {d_conv - 1, channels, n_seqs_, 1});
  const Id conv_input = g_.Concat(states3, qkv_t, 0, fmt::format("conv_input-{}", il));
  const SimNe cin = g_.t(conv_input).ne;
  const Id last = g_.View(conv_input, {d_conv - 1, channels, n_seqs_, 1}, g_.t(conv_input).nb,
                          (cin[0] - (d_conv - 1)) * kF32);
  g_.Expand(g_.CopyInto(r_cache, {last}, fmt::format("conv_state_update-{}", il)));
  const Id ssm_states = g_.GetRows(s_cache, copy_main, fmt::format("ssm_states-{}", il));
  g_.Expand(g_.CopyInto(s_cache, {g_.View(ssm_states, {1, 1, 1, 1}, {4, 4, 4, 4}, 0)},
                        fmt::format("cache_s_l{} (extra)", il)));
  // ggml_ssm_conv: [channels, n_seq_tokens, n_seqs], then SiLU in place.
  Id conv = g_.New(SimOp::kOther, SimType::kF32, {channels, n_seq_tokens, n_seqs_, 1},
                   {conv_input, Wl(il, "ssm_conv1d")}, fmt::format("conv_output_raw-{}", il));
  conv = g_.Inplace({conv}, fmt::format("conv_output_silu-{}", il));
  const SimNe cnb = g_.t(conv).nb;
  auto head_view = [&](int64_t hd, int64_t nh, int64_t off) {
    return g_.View(conv, {hd, nh, n_seq_tokens, n_seqs_}, {kF32, hd * kF32, cnb[1], cnb[2]},
                   off * kF32);
  };
  Id q =
      g_.Inplace({g_.New(SimOp::kOther, SimType::kF32, {head_k, n_k_heads, n_seq_tokens, n_seqs_},
                         {head_view(head_k, n_k_heads, 0)}, fmt::format("q_l2-{}", il))},
                 fmt::format("q_conv_predelta-{}", il));
  Id k = g_.Inplace(
      {g_.New(SimOp::kOther, SimType::kF32, {head_k, n_k_heads, n_seq_tokens, n_seqs_},
              {head_view(head_k, n_k_heads, head_k * n_k_heads)}, fmt::format("k_l2-{}", il))},
      fmt::format("k_conv_predelta-{}", il));
  const Id v = head_view(head_v, n_v_heads, 2 * head_k * n_k_heads);
  if (next && n_k_heads != n_v_heads) {
    q = g_.New(SimOp::kOther, SimType::kF32, {head_k, n_v_heads, n_seq_tokens, n_seqs_}, {q},
               fmt::format("q_repeat-{}", il));
    k = g_.New(SimOp::kOther, SimType::kF32, {head_k, n_v_heads, n_seq_tokens, n_seqs_}, {k},
               fmt::format("k_repeat-{}", il));
  }
  Id beta = -1;
  const Id gate = DeltaNetGate(il, cur, heads, &beta);
  // ggml_gated_delta_net: [head_v * n_v_heads, n_tokens + head_v * n_seqs] f32,
  // the attention output followed by the new state.
  const Id gdn =
      g_.New(SimOp::kOther, SimType::kF32, {head_v * n_v_heads, T_ + head_v * n_seqs_, 1, 1},
             {q, k, v, gate, beta, ssm_states}, fmt::format("gated_delta_net-{}", il));
  const Id out = g_.View(
      gdn, {head_v, n_v_heads, n_seq_tokens, n_seqs_},
      {kF32, head_v * kF32, head_v * n_v_heads * kF32, head_v * n_v_heads * n_seq_tokens * kF32}, 0,
      fmt::format("attn_output-{}", il));
  const Id new_state = g_.View(gdn, {head_v * head_v * n_v_heads, n_seqs_, 1, 1},
                               {kF32, head_v * head_v * n_v_heads * kF32, 0, 0},
                               head_v * n_v_heads * T_ * kF32, fmt::format("new_state-{}", il));
  g_.Expand(g_.CopyInto(s_cache, {new_state}, fmt::format("cache_s_l{} (store)", il)));
  const Id normed = Norm(out, Wl(il, "ssm_norm"), fmt::format("ssm_norm-{}", il));
  return DeltaNetOutput(il, cur, mixed, normed, heads);
}

// The mixed q, k and v of a DeltaNet layer: one projection, or (qwen3next)
// the q, k and v parts of the qkvz projection, which `*mixed` keeps for z.
SimGraph::Id ReserveGraphBuilder::DeltaNetQkv(int il, Id cur, const DeltaNetHeads& h, Id* mixed) {
  if (arch_name_ != "qwen3next")
    return g_.MulMat(Wl(il, "attn_qkv"), cur, fmt::format("qkv_mixed-{}", il));
  *mixed = g_.MulMat(Wl(il, "ssm_in"), cur, fmt::format("linear_attn_mixed_qkvz-{}", il));
  const int64_t w = g_.t(*mixed).ne[0];
  auto part = [&](int64_t n, int64_t off, const char* nm) {
    const Id v = g_.View(*mixed, {n, T_, 1, 1}, {kF32, w * kF32, 0, 0}, off * kF32);
    return g_.Cont(v, fmt::format("{}-{}", nm, il));
  };
  const Id qf = part(h.head_k * h.n_k_heads, 0, "query_flat");
  const Id kf = part(h.head_k * h.n_k_heads, h.head_k * h.n_k_heads, "key_flat");
  const Id qk = g_.Concat(qf, kf, 0, fmt::format("qk_flat-{}", il));
  const Id vf = part(h.head_v * h.n_v_heads, 2 * h.head_k * h.n_k_heads, "value_flat");
  return g_.Concat(qk, vf, 0, fmt::format("qkv_mixed-{}", il));
}

// The decay gate of a DeltaNet layer (alpha, biased, softplus, times A), and
// its beta (sigmoid) in `*beta`.
SimGraph::Id ReserveGraphBuilder::DeltaNetGate(int il, Id cur, const DeltaNetHeads& h, Id* beta) {
  Id alpha;
  if (arch_name_ == "qwen3next") {
    const Id ba = g_.MulMat(Wl(il, "ssm_ba"), cur, fmt::format("linear_attn_mixed_ba-{}", il));
    const int64_t w = g_.t(ba).ne[0];
    alpha = g_.Cont(g_.View(ba, {h.n_v_heads, T_, 1, 1}, {kF32, w * kF32, 0, 0}, 0),
                    fmt::format("a-{}", il));
    *beta = g_.Inplace(
        {g_.View(ba, {h.n_v_heads, T_, 1, 1}, {kF32, w * kF32, 0, 0}, h.n_v_heads * kF32)},
        fmt::format("beta_sigmoid-{}", il));
  } else {
    alpha = g_.MulMat(Wl(il, "ssm_alpha"), cur, fmt::format("alpha-{}", il));
    *beta = g_.Inplace({g_.MulMat(Wl(il, "ssm_beta"), cur, fmt::format("beta-{}", il))},
                       fmt::format("beta_sigmoid-{}", il));
  }
  Id gate = g_.Inplace({alpha, Wl(il, "ssm_dt", "bias")}, fmt::format("alpha_biased-{}", il));
  gate = g_.Inplace({gate}, fmt::format("a_softplus-{}", il));
  return g_.Inplace({gate, W(fmt::format("blk.{}.ssm_a", il), il)}, fmt::format("gate-{}", il));
}

// The output of a DeltaNet layer: the normed attention output gated by
// SiLU(z), then the output projection. z has its own projection, or
// (qwen3next) is the z part of the qkvz projection `mixed`.
SimGraph::Id ReserveGraphBuilder::DeltaNetOutput(int il, Id cur, Id mixed, Id normed,
                                                 const DeltaNetHeads& h) {
  const int64_t n_seq_tokens = T_ / n_seqs_;
  Id z;
  if (arch_name_ == "qwen3next") {
    const int64_t w = g_.t(mixed).ne[0];
    z = g_.Cont(g_.View(mixed, {h.head_v * h.n_v_heads, T_, 1, 1}, {kF32, w * kF32, 0, 0},
                        (2 * h.head_k * h.n_k_heads + h.head_v * h.n_v_heads) * kF32),
                fmt::format("z-{}", il));
  } else {
    z = g_.MulMat(Wl(il, "attn_gate"), cur, fmt::format("z-{}", il));
  }
  const Id z4 = g_.Reshape(z, {h.head_v, h.n_v_heads, n_seq_tokens, n_seqs_});
  const Id gated = g_.Inplace({normed, g_.Inplace({z4}, fmt::format("z_silu-{}", il))},
                              fmt::format("gated_norm-{}", il));
  const Id flat = g_.Reshape(gated, {h.head_v * h.n_v_heads, n_seq_tokens, n_seqs_, 1},
                             fmt::format("final_output-{}", il));
  const Id o = g_.MulMat(Wl(il, "ssm_out"), flat, fmt::format("linear_attn_out-{}", il));
  return g_.Reshape(o, {g_.t(o).ne[0], T_, 1, 1});
}

}  // namespace moetune
