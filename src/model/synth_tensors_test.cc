#include "model/synth_tensors.h"

#include <gtest/gtest.h>

#include <map>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

std::map<std::string, std::vector<int64_t>> Shapes(const std::vector<SynthTensor>& ts) {
  std::map<std::string, std::vector<int64_t>> m;
  for (const auto& t : ts) m[t.name] = t.ne;
  return m;
}

TEST(SynthTensorsTest, Qwen3MoeFullScaleListMatchesTheRealModel) {
  auto list = SynthTensorList(*SynthPreset("qwen3moe"));
  ASSERT_TRUE(list.ok());
  // 3 global + 48 layers x (attn_norm, q, k, v, o, q_norm, k_norm, ffn_norm, router, 3 experts).
  EXPECT_EQ(list->size(), 3u + 48u * 12u);
  const auto m = Shapes(*list);
  EXPECT_EQ(m.at("token_embd.weight"), (std::vector<int64_t>{2048, 151936}));
  EXPECT_EQ(m.at("blk.0.attn_q.weight"), (std::vector<int64_t>{2048, 4096}));
  EXPECT_EQ(m.at("blk.0.attn_k.weight"), (std::vector<int64_t>{2048, 512}));
  EXPECT_EQ(m.at("blk.47.ffn_gate_exps.weight"), (std::vector<int64_t>{2048, 768, 128}));
  EXPECT_EQ(m.at("blk.47.ffn_down_exps.weight"), (std::vector<int64_t>{768, 2048, 128}));
  EXPECT_EQ(m.at("blk.3.ffn_gate_inp.weight"), (std::vector<int64_t>{2048, 128}));
  EXPECT_EQ(m.at("blk.3.attn_k_norm.weight"), (std::vector<int64_t>{128}));
}

TEST(SynthTensorsTest, Qwen35MoeAlternatesDeltaNetAndFullAttention) {
  SynthSpec s = ScaleSynthSpec(*SynthPreset("qwen35moe"), SynthScale{});
  auto list = SynthTensorList(s);
  ASSERT_TRUE(list.ok());
  const auto m = Shapes(*list);
  EXPECT_TRUE(m.count("blk.0.ssm_out.weight"));
  EXPECT_TRUE(m.count("blk.0.attn_qkv.weight"));
  EXPECT_FALSE(m.count("blk.0.attn_q.weight"));
  EXPECT_TRUE(m.count("blk.3.attn_q.weight"));
  EXPECT_FALSE(m.count("blk.3.ssm_out.weight"));
  // Full-attention query carries the output gate: 2 x heads x head size.
  EXPECT_EQ(m.at("blk.3.attn_q.weight")[1], 2 * s.n_head * s.head_dim);
  EXPECT_EQ(m.at("blk.0.ssm_conv1d.weight"),
            (std::vector<int64_t>{4, 2 * s.ssm_state * s.ssm_groups + s.ssm_inner()}));
  EXPECT_TRUE(m.count("blk.7.ffn_gate_inp_shexp.weight"));
  EXPECT_TRUE(m.count("blk.7.ffn_up_shexp.weight"));
}

TEST(SynthTensorsTest, GptOssHasSinksAndExpertBiases) {
  auto list = SynthTensorList(*SynthPreset("gpt-oss-20b"));
  ASSERT_TRUE(list.ok());
  const auto m = Shapes(*list);
  EXPECT_EQ(m.at("blk.0.attn_sinks.weight"), (std::vector<int64_t>{64}));
  EXPECT_EQ(m.at("blk.0.ffn_gate_exps.bias"), (std::vector<int64_t>{2880, 32}));
  EXPECT_EQ(m.at("blk.0.attn_q.weight"), (std::vector<int64_t>{2880, 4096}));
  EXPECT_EQ(m.at("blk.0.attn_output.bias"), (std::vector<int64_t>{2880}));
}

TEST(SynthTensorsTest, DenseLeadingLayersAndMla) {
  auto list = SynthTensorList(*SynthPreset("deepseek2"));
  ASSERT_TRUE(list.ok());
  const auto m = Shapes(*list);
  EXPECT_TRUE(m.count("blk.2.ffn_gate.weight"));
  EXPECT_FALSE(m.count("blk.2.ffn_gate_exps.weight"));
  EXPECT_EQ(m.at("blk.3.ffn_gate_exps.weight"), (std::vector<int64_t>{7168, 2048, 256}));
  EXPECT_EQ(m.at("blk.3.attn_kv_a_mqa.weight"), (std::vector<int64_t>{7168, 576}));
  EXPECT_EQ(m.at("blk.3.attn_k_b.weight"), (std::vector<int64_t>{128, 512, 128}));
  EXPECT_EQ(m.at("blk.3.attn_v_b.weight"), (std::vector<int64_t>{512, 128, 128}));
  EXPECT_TRUE(m.count("blk.3.exp_probs_b.bias"));
}

TEST(SynthTensorsTest, TypesFollowTheSchemeWithFallbacks) {
  SynthTensor expert{"blk.0.ffn_up_exps.weight", {2048, 768, 128}, SynthGroup::kExperts};
  SynthTensor attn{"blk.0.attn_q.weight", {2048, 4096}, SynthGroup::kAttention};
  SynthTensor norm{"blk.0.attn_norm.weight", {2048}, SynthGroup::kNorm};
  SynthTensor router{"blk.0.ffn_gate_inp.weight", {2048, 128}, SynthGroup::kRouter};
  SynthTensor odd{"blk.0.ffn_down_exps.weight", {2880, 2880, 32}, SynthGroup::kExperts};
  SynthTensor k_b{"blk.0.attn_k_b.weight", {100, 512, 4}, SynthGroup::kAttention};
  using namespace ggml_type;
  EXPECT_EQ(SynthTensorType(expert, SynthQuant::kQ4_K_M), kQ4_K);
  EXPECT_EQ(SynthTensorType(attn, SynthQuant::kQ4_K_M), kQ6_K);
  EXPECT_EQ(SynthTensorType(norm, SynthQuant::kQ4_K_M), kF32);
  EXPECT_EQ(SynthTensorType(router, SynthQuant::kQ8_0), kF32);
  EXPECT_EQ(SynthTensorType(attn, SynthQuant::kF16), kF16);
  EXPECT_EQ(SynthTensorType(odd, SynthQuant::kQ4_K), kQ8_0);  // 2880 is not a multiple of 256
  EXPECT_EQ(SynthTensorType(odd, SynthQuant::kMxfp4), kMXFP4);
  EXPECT_EQ(SynthTensorType(k_b, SynthQuant::kQ8_0), kF16);  // 100 is not a multiple of 32
  EXPECT_TRUE(ParseSynthQuant("Q4_K_M").ok());
  EXPECT_FALSE(ParseSynthQuant("q3_k").ok());
}

TEST(SynthTensorsTest, EveryTinyPresetHasQuantizableRows) {
  for (const auto& name : SynthPresetNames()) {
    const SynthSpec s = ScaleSynthSpec(*SynthPreset(name), SynthScale{});
    auto list = SynthTensorList(s);
    ASSERT_TRUE(list.ok()) << name;
    for (const auto& t : *list) {
      const auto info = GgmlTypeById(SynthTensorType(t, SynthQuant::kQ4_K_M));
      ASSERT_TRUE(info.has_value());
      EXPECT_TRUE(GgmlRowBytes(*info, static_cast<uint64_t>(t.ne[0])).has_value()) << t.name;
    }
  }
}

}  // namespace
}  // namespace moetune
