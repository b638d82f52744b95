#include "model/synth_tensors.h"

#include <gtest/gtest.h>

#include <map>

#include "gguf/ggml_type.h"
#include "model/quantize.h"

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

// Types by name for a preset at a scale.
std::map<std::string, uint32_t> TypesByName(const SynthSpec& s, SynthQuant q) {
  auto list = SynthTensorList(s);
  EXPECT_TRUE(list.ok());
  const auto types = SynthTensorTypes(s, *list, q);
  std::map<std::string, uint32_t> out;
  for (size_t i = 0; i < list->size(); ++i) out[(*list)[i].name] = types[i];
  return out;
}

TEST(SynthTensorsTest, TypesFollowLlamaCppsRecipe) {
  using namespace ggml_type;
  // Full-scale Qwen3-30B-A3B (48 layers, 128 experts) at Q4_K_M.
  const auto t = TypesByName(*SynthPreset("qwen3moe"), SynthQuant::kQ4_K_M);
  EXPECT_EQ(t.at("blk.0.ffn_up_exps.weight"), kQ4_K);
  EXPECT_EQ(t.at("blk.0.ffn_down_exps.weight"), kQ6_K);  // first eighth: more bits
  EXPECT_EQ(t.at("blk.6.ffn_down_exps.weight"), kQ4_K);
  EXPECT_EQ(t.at("blk.8.ffn_down_exps.weight"), kQ6_K);  // (8 - 6) % 3 == 2
  EXPECT_EQ(t.at("blk.8.attn_v.weight"), kQ6_K);
  EXPECT_EQ(t.at("blk.9.attn_v.weight"), kQ4_K);
  EXPECT_EQ(t.at("blk.9.attn_q.weight"), kQ4_K);
  EXPECT_EQ(t.at("blk.0.attn_norm.weight"), kF32);
  EXPECT_EQ(t.at("blk.0.ffn_gate_inp.weight"), kF32);
  EXPECT_EQ(t.at("output.weight"), kQ6_K);
  EXPECT_EQ(t.at("token_embd.weight"), kQ4_K);
  // F16 is the source: weights F16, the small tensors F32.
  const auto f = TypesByName(*SynthPreset("qwen3moe"), SynthQuant::kF16);
  EXPECT_EQ(f.at("blk.0.ffn_up_exps.weight"), kF16);
  EXPECT_EQ(f.at("blk.0.ffn_gate_inp.weight"), kF32);
  // gpt-oss: rows of 2880 do not fit 256-blocks; the experts are MXFP4 in mxfp4.
  const auto g = TypesByName(*SynthPreset("gpt-oss-20b"), SynthQuant::kQ4_K);
  EXPECT_EQ(g.at("blk.5.ffn_up_exps.weight"), kQ5_0);
  EXPECT_EQ(g.at("output.weight"), kQ8_0);
  const auto x = TypesByName(*SynthPreset("gpt-oss-20b"), SynthQuant::kMxfp4);
  EXPECT_EQ(x.at("blk.5.ffn_up_exps.weight"), kMXFP4);
  EXPECT_EQ(x.at("blk.5.attn_q.weight"), kQ8_0);
  EXPECT_EQ(SynthFileType(SynthQuant::kQ4_K_M), 15u);
  EXPECT_EQ(SynthFileType(SynthQuant::kQ4_K), 14u);
  EXPECT_EQ(SynthFileType(SynthQuant::kMxfp4), 38u);
}

TEST(SynthTensorsTest, QuantNamesParse) {
  EXPECT_EQ(*ParseSynthQuant("Q4_K_M"), SynthQuant::kQ4_K_M);
  EXPECT_EQ(*ParseSynthQuant("q4_k"), SynthQuant::kQ4_K);
  EXPECT_EQ(*ParseSynthQuant("q4_k_s"), SynthQuant::kQ4_K);
  EXPECT_EQ(*ParseSynthQuant("Q5_K_M"), SynthQuant::kQ5_K_M);
  EXPECT_EQ(*ParseSynthQuant("q5_k_s"), SynthQuant::kQ5_K_S);
  EXPECT_FALSE(ParseSynthQuant("q3_k").ok());
  for (auto q :
       {SynthQuant::kF16, SynthQuant::kQ8_0, SynthQuant::kQ6_K, SynthQuant::kQ4_K,
        SynthQuant::kQ4_K_M, SynthQuant::kQ5_K_S, SynthQuant::kQ5_K_M, SynthQuant::kMxfp4}) {
    EXPECT_EQ(*ParseSynthQuant(SynthQuantName(q)), q);
  }
}

TEST(SynthTensorsTest, EveryTinyPresetHasQuantizableRows) {
  for (const auto& name : SynthPresetNames()) {
    const SynthSpec s = ScaleSynthSpec(*SynthPreset(name), SynthScale{});
    auto list = SynthTensorList(s);
    ASSERT_TRUE(list.ok()) << name;
    for (auto q :
         {SynthQuant::kQ4_K_M, SynthQuant::kQ4_K, SynthQuant::kQ5_K_M, SynthQuant::kMxfp4}) {
      const auto types = SynthTensorTypes(s, *list, q);
      for (size_t i = 0; i < list->size(); ++i) {
        const auto info = GgmlTypeById(types[i]);
        ASSERT_TRUE(info.has_value());
        EXPECT_TRUE(CanQuantize(types[i])) << (*list)[i].name;
        EXPECT_TRUE(GgmlRowBytes(*info, static_cast<uint64_t>((*list)[i].ne[0])).has_value())
            << (*list)[i].name;
      }
    }
  }
}

}  // namespace
}  // namespace moetune
