#include "model/quant_recipe.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

using namespace ggml_type;

// A model's tensors by name; the recipe's answer by name.
class Model {
 public:
  void Add(const std::string& name, std::vector<int64_t> ne, uint32_t source = kF16) {
    tensors_.push_back({name, std::move(ne), source});
  }
  void Layer(int il, const std::string& base, std::vector<int64_t> ne, uint32_t source = kF16) {
    Add(fmt::format("blk.{}.{}", il, base), std::move(ne), source);
  }
  std::map<std::string, uint32_t> Types(const QuantRecipeModel& m, LlamaFtype f) const {
    const auto types = QuantRecipeTypes(m, f, tensors_);
    std::map<std::string, uint32_t> out;
    for (size_t i = 0; i < tensors_.size(); ++i) out[tensors_[i].name] = types[i];
    return out;
  }
  std::vector<QuantRecipeTensor>& tensors() { return tensors_; }

 private:
  std::vector<QuantRecipeTensor> tensors_;
};

// A dense llama-like model: rows of 256 fit every block.
Model Dense(int n_layer, bool with_output = true) {
  Model m;
  m.Add("token_embd.weight", {256, 1000});
  m.Add("output_norm.weight", {256}, kF32);
  if (with_output) m.Add("output.weight", {256, 1000});
  for (int il = 0; il < n_layer; ++il) {
    m.Layer(il, "attn_norm.weight", {256}, kF32);
    for (const char* p : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      m.Layer(il, std::string(p) + ".weight", {256, 256});
    }
    m.Layer(il, "ffn_norm.weight", {256}, kF32);
    m.Layer(il, "ffn_gate.weight", {256, 512});
    m.Layer(il, "ffn_up.weight", {256, 512});
    m.Layer(il, "ffn_down.weight", {512, 256});
  }
  return m;
}

// A MoE model with `n_expert` experts per layer, one shared expert.
Model Moe(int n_layer, int64_t n_expert) {
  Model m;
  m.Add("token_embd.weight", {256, 1000});
  m.Add("output.weight", {256, 1000});
  for (int il = 0; il < n_layer; ++il) {
    for (const char* p : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      m.Layer(il, std::string(p) + ".weight", {256, 256});
    }
    m.Layer(il, "ffn_gate_inp.weight", {256, n_expert}, kF32);
    m.Layer(il, "ffn_gate_exps.weight", {256, 256, n_expert});
    m.Layer(il, "ffn_up_exps.weight", {256, 256, n_expert});
    m.Layer(il, "ffn_down_exps.weight", {256, 256, n_expert});
    m.Layer(il, "ffn_down_shexp.weight", {256, 256});
  }
  return m;
}

std::string Blk(int il, const char* base) { return fmt::format("blk.{}.{}.weight", il, base); }

TEST(QuantRecipeTest, Q4KMGivesMoreBitsToAttnVAndFfnDownOnEveryThirdLayerAndTheEnds) {
  const auto t = Dense(16).Types({"llama", 16, 0, false}, LlamaFtype::kQ4_K_M);
  // use_more_bits(i, 16): i < 2, i >= 14, and (i - 2) % 3 == 2.
  const std::vector<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int il = 0; il < 16; ++il) {
    const bool m = std::count(more.begin(), more.end(), il) > 0;
    EXPECT_EQ(t.at(Blk(il, "attn_v")), m ? kQ6_K : kQ4_K) << il;
    EXPECT_EQ(t.at(Blk(il, "ffn_down")), m ? kQ6_K : kQ4_K) << il;
    EXPECT_EQ(t.at(Blk(il, "attn_q")), kQ4_K);
    EXPECT_EQ(t.at(Blk(il, "attn_k")), kQ4_K);
    EXPECT_EQ(t.at(Blk(il, "attn_output")), kQ4_K);
    EXPECT_EQ(t.at(Blk(il, "ffn_gate")), kQ4_K);
    EXPECT_EQ(t.at(Blk(il, "attn_norm")), kF32);
  }
  EXPECT_EQ(t.at("output.weight"), kQ6_K);
  EXPECT_EQ(t.at("token_embd.weight"), kQ4_K);
  EXPECT_EQ(t.at("output_norm.weight"), kF32);
}

TEST(QuantRecipeTest, Q4KSWidensTheFirstFourAttnVAndTheFirstEighthOfFfnDown) {
  const auto t = Dense(16).Types({"llama", 16, 0, false}, LlamaFtype::kQ4_K_S);
  for (int il = 0; il < 16; ++il) {
    EXPECT_EQ(t.at(Blk(il, "attn_v")), il < 4 ? kQ5_K : kQ4_K) << il;
    EXPECT_EQ(t.at(Blk(il, "ffn_down")), il < 2 ? kQ5_K : kQ4_K) << il;
  }
  EXPECT_EQ(t.at("output.weight"), kQ6_K);
}

TEST(QuantRecipeTest, Q5KMQ6KAndQ8Follow) {
  const QuantRecipeModel m{"llama", 16, 0, false};
  const auto q5 = Dense(16).Types(m, LlamaFtype::kQ5_K_M);
  EXPECT_EQ(q5.at(Blk(0, "attn_v")), kQ6_K);
  EXPECT_EQ(q5.at(Blk(2, "attn_v")), kQ5_K);
  EXPECT_EQ(q5.at(Blk(4, "ffn_down")), kQ6_K);
  EXPECT_EQ(q5.at(Blk(5, "ffn_down")), kQ5_K);
  EXPECT_EQ(q5.at("output.weight"), kQ6_K);
  const auto q5s = Dense(16).Types(m, LlamaFtype::kQ5_K_S);
  EXPECT_EQ(q5s.at(Blk(0, "attn_v")), kQ5_K);
  EXPECT_EQ(q5s.at(Blk(0, "ffn_down")), kQ5_K);
  const auto q6 = Dense(16).Types(m, LlamaFtype::kQ6_K);
  for (const auto& [name, type] : q6)
    EXPECT_EQ(type, name.find("norm") != name.npos ? kF32 : kQ6_K);
  const auto q8 = Dense(16).Types(m, LlamaFtype::kQ8_0);
  for (const auto& [name, type] : q8)
    EXPECT_EQ(type, name.find("norm") != name.npos ? kF32 : kQ8_0);
  const auto f16 = Dense(16).Types(m, LlamaFtype::kF16);
  for (const auto& [name, type] : f16)
    EXPECT_EQ(type, name.find("norm") != name.npos ? kF32 : kF16);
}

TEST(QuantRecipeTest, EightExpertsGetWideAttentionAndExpertsFollowTheirLayer) {
  const auto t = Moe(16, 8).Types({"llama", 16, 8, false}, LlamaFtype::kQ4_K_M);
  for (int il = 0; il < 16; ++il) {
    EXPECT_EQ(t.at(Blk(il, "attn_v")), kQ8_0);
    EXPECT_EQ(t.at(Blk(il, "attn_k")), kQ8_0);
    EXPECT_EQ(t.at(Blk(il, "attn_output")), kQ5_K);
    EXPECT_EQ(t.at(Blk(il, "attn_q")), kQ4_K);
    EXPECT_EQ(t.at(Blk(il, "ffn_gate_inp")), kF32);  // routers are left alone
  }
  // Both ffn_down tensors of a layer take that layer's verdict.
  EXPECT_EQ(t.at(Blk(4, "ffn_down_exps")), kQ6_K);
  EXPECT_EQ(t.at(Blk(4, "ffn_down_shexp")), kQ6_K);
  EXPECT_EQ(t.at(Blk(5, "ffn_down_exps")), kQ4_K);
  EXPECT_EQ(t.at(Blk(5, "ffn_down_shexp")), kQ4_K);
  EXPECT_EQ(t.at(Blk(5, "ffn_up_exps")), kQ4_K);
  // Q6_K: only the 8-expert attn_v/attn_k rule changes anything.
  const auto q6 = Moe(16, 8).Types({"llama", 16, 8, false}, LlamaFtype::kQ6_K);
  EXPECT_EQ(q6.at(Blk(3, "attn_v")), kQ8_0);
  EXPECT_EQ(q6.at(Blk(3, "attn_k")), kQ8_0);
  EXPECT_EQ(q6.at(Blk(3, "attn_output")), kQ6_K);
  // Other expert counts keep the attn_v counter rule and plain attn_output.
  const auto x16 = Moe(16, 16).Types({"qwen3moe", 16, 16, false}, LlamaFtype::kQ4_K_M);
  EXPECT_EQ(x16.at(Blk(0, "attn_v")), kQ6_K);
  EXPECT_EQ(x16.at(Blk(2, "attn_v")), kQ4_K);
  EXPECT_EQ(x16.at(Blk(2, "attn_k")), kQ4_K);
  EXPECT_EQ(x16.at(Blk(2, "attn_output")), kQ4_K);
}

TEST(QuantRecipeTest, TheAttnVCounterRunsInLayerOrderOverEveryValueLikeTensor) {
  // A hybrid model: attn_qkv in three of four layers, attn_v in the fourth.
  // All count; the order is the loader's (layer, then name), not the input's.
  Model m;
  m.Add("output.weight", {256, 1000});
  for (int il = 0; il < 16; ++il) {
    m.Layer(il, (il + 1) % 4 == 0 ? "attn_v.weight" : "attn_qkv.weight", {256, 256});
  }
  std::mt19937 rng(3);
  std::shuffle(m.tensors().begin(), m.tensors().end(), rng);
  const auto t = m.Types({"qwen35moe", 16, 32, false}, LlamaFtype::kQ4_K_M);
  const std::vector<int> more = {0, 1, 4, 7, 10, 13, 14, 15};
  for (int il = 0; il < 16; ++il) {
    const bool wide = std::count(more.begin(), more.end(), il) > 0;
    const auto name = Blk(il, (il + 1) % 4 == 0 ? "attn_v" : "attn_qkv");
    EXPECT_EQ(t.at(name), wide ? kQ6_K : kQ4_K) << name;
  }
  // Layer 10 sorts after layer 9 (numerically), not after layer 1.
  EXPECT_EQ(t.at(Blk(10, "attn_qkv")), kQ6_K);
  EXPECT_EQ(t.at(Blk(11, "attn_v")), kQ4_K);
}

TEST(QuantRecipeTest, RowsThatDoNotFitABlockFallBack) {
  Model m;
  m.Add("token_embd.weight", {2880, 1000});
  m.Add("output.weight", {2880, 1000});
  m.Layer(0, "attn_v.weight", {2880, 512});
  m.Layer(0, "attn_q.weight", {2880, 4096});
  m.Layer(0, "ffn_down_exps.weight", {2880, 2880, 32});
  m.Layer(0, "odd.weight", {100, 64});
  const QuantRecipeModel gpt{"gpt-oss", 8, 32, false};
  const auto s = m.Types(gpt, LlamaFtype::kQ4_K_S);
  EXPECT_EQ(s.at("output.weight"), kQ8_0);          // 2880 % 256: Q8_0 for the head
  EXPECT_EQ(s.at("token_embd.weight"), kQ5_0);      // Q4_K -> Q5_0
  EXPECT_EQ(s.at(Blk(0, "attn_v")), kQ5_1);         // Q5_K -> Q5_1
  EXPECT_EQ(s.at(Blk(0, "ffn_down_exps")), kQ5_1);  // layer 0 < 8/8: Q5_K
  EXPECT_EQ(s.at(Blk(0, "odd")), kF16);             // 100 % 32: F16
  const auto m6 = m.Types(gpt, LlamaFtype::kQ6_K);
  EXPECT_EQ(m6.at(Blk(0, "attn_q")), kQ8_0);  // Q6_K -> Q8_0
  // llama.cpp has no fallback for Q8_0; F16 stands in.
  EXPECT_EQ(m.Types(gpt, LlamaFtype::kQ8_0).at(Blk(0, "odd")), kF16);
}

TEST(QuantRecipeTest, Mxfp4MoeQuantizesEveryThreeDimensionalWeightToMxfp4) {
  Model m;
  m.Add("token_embd.weight", {256, 1000});
  m.Add("output.weight", {256, 1000});
  m.Layer(0, "attn_q.weight", {256, 256});
  m.Layer(0, "ffn_gate_inp.weight", {256, 32}, kF32);
  m.Layer(0, "ffn_up_exps.weight", {256, 256, 32});
  m.Layer(0, "attn_k_b.weight", {128, 512, 4});
  m.Layer(0, "attn_sinks.weight", {64}, kF32);
  const auto t = m.Types({"gpt-oss", 1, 32, false}, LlamaFtype::kMxfp4Moe);
  EXPECT_EQ(t.at("output.weight"), kQ8_0);
  EXPECT_EQ(t.at("token_embd.weight"), kQ8_0);
  EXPECT_EQ(t.at(Blk(0, "attn_q")), kQ8_0);
  EXPECT_EQ(t.at(Blk(0, "ffn_gate_inp")), kF32);
  EXPECT_EQ(t.at(Blk(0, "ffn_up_exps")), kMXFP4);
  EXPECT_EQ(t.at(Blk(0, "attn_k_b")), kMXFP4);
  EXPECT_EQ(t.at(Blk(0, "attn_sinks")), kF32);
}

TEST(QuantRecipeTest, TiedEmbeddingsTakeTheOutputHeadsType) {
  const auto t = Dense(8, /*with_output=*/false).Types({"llama", 8, 0, false}, LlamaFtype::kQ4_K_M);
  EXPECT_EQ(t.at("token_embd.weight"), kQ6_K);
}

TEST(QuantRecipeTest, SeventyBModelsWidenAttnV) {
  EXPECT_TRUE(IsLlamaType70B("llama", 80, 0, 64, 8));
  EXPECT_FALSE(IsLlamaType70B("llama", 80, 0, 64, 64));  // 65B: no GQA
  EXPECT_FALSE(IsLlamaType70B("llama", 80, 8, 64, 8));
  EXPECT_TRUE(IsLlamaType70B("qwen2", 80, 0, 64, 8));
  EXPECT_FALSE(IsLlamaType70B("qwen3", 80, 0, 64, 8));
  const auto t = Dense(80).Types({"llama", 80, 0, true}, LlamaFtype::kQ4_K_M);
  EXPECT_EQ(t.at(Blk(0, "attn_v")), kQ6_K);   // more bits first
  EXPECT_EQ(t.at(Blk(11, "attn_v")), kQ5_K);  // otherwise Q4_K -> Q5_K
  const auto s = Dense(80).Types({"llama", 80, 0, true}, LlamaFtype::kQ4_K_S);
  EXPECT_EQ(s.at(Blk(40, "attn_v")), kQ5_K);
}

TEST(QuantRecipeTest, OnlyWeightsOfTwoOrMoreDimensionsAreTouched) {
  EXPECT_TRUE(QuantizerTouches("blk.0.attn_q.weight", 2));
  EXPECT_TRUE(QuantizerTouches("blk.0.ffn_up_exps.weight", 3));
  EXPECT_FALSE(QuantizerTouches("blk.0.attn_q.bias", 2));
  EXPECT_FALSE(QuantizerTouches("blk.0.attn_norm.weight", 2));
  EXPECT_FALSE(QuantizerTouches("blk.0.ffn_gate_inp.weight", 2));
  EXPECT_FALSE(QuantizerTouches("blk.0.ssm_conv1d.weight", 2));
  EXPECT_FALSE(QuantizerTouches("blk.0.attn_sinks.weight", 1));
  EXPECT_TRUE(QuantizerTouches("blk.0.ffn_gate_inp_shexp.weight", 2));
  // A trailing dimension of 1 does not count (ggml_n_dims).
  Model m;
  m.Layer(0, "ssm_beta.weight", {256, 1}, kF16);
  EXPECT_EQ(m.Types({"qwen35moe", 1, 8, false}, LlamaFtype::kQ8_0).at(Blk(0, "ssm_beta")), kF16);
}

}  // namespace
}  // namespace moetune
