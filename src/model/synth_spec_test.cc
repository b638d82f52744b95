#include "model/synth_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/arch.h"

namespace moetune {
namespace {

using json = nlohmann::json;

TEST(SynthSpecTest, EveryPresetIsValidAtEveryScale) {
  for (const auto& name : SynthPresetNames()) {
    auto spec = SynthPreset(name);
    ASSERT_TRUE(spec.ok()) << name;
    EXPECT_TRUE(ValidateSynthSpec(*spec).ok()) << name;
    for (const char* scale : {"tiny", "small", "full", "0.25"}) {
      auto sc = ParseSynthScale(scale);
      ASSERT_TRUE(sc.ok());
      const SynthSpec s = ScaleSynthSpec(*spec, *sc);
      auto st = ValidateSynthSpec(s);
      EXPECT_TRUE(st.ok()) << name << " " << scale << ": " << (st.ok() ? "" : st.error().message());
    }
  }
}

TEST(SynthSpecTest, UnknownPresetNamesTheValidOnes) {
  auto r = SynthPreset("qwen9");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(r.error().message().find("qwen35moe"), std::string::npos);
}

TEST(SynthSpecTest, TinyKeepsTheLayerPatterns) {
  const SynthScale tiny;
  const SynthSpec q35 = ScaleSynthSpec(*SynthPreset("qwen35moe"), tiny);
  EXPECT_EQ(q35.n_layer, 8);
  EXPECT_EQ(q35.full_attention_interval, 4);
  int recurrent = 0;
  for (int il = 0; il < q35.n_layer; ++il) recurrent += q35.IsRecurrentLayer(il) ? 1 : 0;
  EXPECT_EQ(recurrent, 6);  // 3 linear + 1 full, twice
  EXPECT_FALSE(q35.IsRecurrentLayer(3));
  EXPECT_EQ(q35.n_expert_shared, 1);

  const SynthSpec oss = ScaleSynthSpec(*SynthPreset("gpt-oss-20b"), tiny);
  EXPECT_EQ(oss.sliding_window, 128);
  EXPECT_EQ(oss.n_layer % 2, 0);
  EXPECT_EQ(oss.n_embd % 256, 0);

  const SynthSpec ds = ScaleSynthSpec(*SynthPreset("deepseek2"), tiny);
  EXPECT_EQ(ds.leading_dense, 1);
  EXPECT_FALSE(ds.IsMoeLayer(0));
  EXPECT_TRUE(ds.IsMoeLayer(1));

  const SynthSpec q3 = ScaleSynthSpec(*SynthPreset("qwen3moe"), tiny);
  EXPECT_LE(q3.n_vocab, 2048);
  EXPECT_EQ(q3.n_ff_exp % 256, 0);
  EXPECT_EQ((q3.n_head * q3.head_dim) % 256, 0);
}

// qwen2's Q projection spans the hidden size ([n_embd, n_embd] in llama.cpp):
// scaled shapes keep heads x head size = hidden, at every scale.
TEST(SynthSpecTest, HeadsSpanningTheHiddenSizeKeepDoingSo) {
  for (const char* scale : {"tiny", "small"}) {
    for (const char* preset : {"qwen2", "llama"}) {
      const SynthSpec s = ScaleSynthSpec(*SynthPreset(preset), *ParseSynthScale(scale));
      EXPECT_EQ(s.n_head * s.head_dim, s.n_embd) << preset << " " << scale;
      EXPECT_TRUE(ValidateSynthSpec(s).ok()) << preset << " " << scale;
    }
  }
}

TEST(SynthSpecTest, ScaleParsing) {
  EXPECT_EQ(ParseSynthScale("tiny")->kind, SynthScale::Kind::kTiny);
  EXPECT_EQ(ParseSynthScale("small")->kind, SynthScale::Kind::kSmall);
  EXPECT_EQ(ParseSynthScale("full")->factor, 1.0);
  EXPECT_EQ(ParseSynthScale("0.5")->factor, 0.5);
  EXPECT_FALSE(ParseSynthScale("2").ok());
  EXPECT_FALSE(ParseSynthScale("huge").ok());
  EXPECT_FALSE(ParseSynthScale("0").ok());
  // full = the real shape, untouched.
  const SynthSpec g = *SynthPreset("gpt-oss-120b");
  const SynthSpec f = ScaleSynthSpec(g, *ParseSynthScale("full"));
  EXPECT_EQ(f.n_embd, 2880);
  EXPECT_EQ(f.n_expert, 128);
}

TEST(SynthSpecTest, ParsesQwen3MoeConfig) {
  const json c = json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
    "num_hidden_layers": 48, "hidden_size": 2048, "intermediate_size": 6144,
    "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
    "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "vocab_size": 151936, "max_position_embeddings": 40960, "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-06})");
  auto r = SynthSpecFromHfConfig(c);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->arch, "qwen3moe");
  EXPECT_EQ(r->n_ff_exp, 768);
  EXPECT_EQ(r->n_expert, 128);
  EXPECT_EQ(r->n_head_kv, 4);
  EXPECT_FLOAT_EQ(r->rope_theta, 1e6f);
}

TEST(SynthSpecTest, ParsesQwen35TextConfigWithLayerTypes) {
  json text = {{"model_type", "qwen3_5_moe_text"},
               {"num_hidden_layers", 8},
               {"hidden_size", 2048},
               {"moe_intermediate_size", 512},
               {"shared_expert_intermediate_size", 512},
               {"num_experts", 256},
               {"num_experts_per_tok", 8},
               {"num_attention_heads", 16},
               {"num_key_value_heads", 2},
               {"head_dim", 256},
               {"vocab_size", 248320},
               {"partial_rotary_factor", 0.25},
               {"linear_conv_kernel_dim", 4},
               {"linear_key_head_dim", 128},
               {"linear_value_head_dim", 128},
               {"linear_num_key_heads", 16},
               {"linear_num_value_heads", 32}};
  text["layer_types"] = {"linear_attention", "linear_attention", "linear_attention",
                         "full_attention",   "linear_attention", "linear_attention",
                         "linear_attention", "full_attention"};
  const json c = {{"model_type", "qwen3_5_moe"}, {"text_config", text}};
  auto r = SynthSpecFromHfConfig(c);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->arch, "qwen35moe");
  EXPECT_EQ(r->full_attention_interval, 4);
  EXPECT_EQ(r->n_rot, 64);
  EXPECT_EQ(r->ssm_inner(), 4096);
  EXPECT_EQ(r->n_ff_shexp, 512);
}

TEST(SynthSpecTest, ParsesDeepseekAndGptOss) {
  const json ds = json::parse(R"({"model_type": "deepseek_v3", "num_hidden_layers": 61,
    "hidden_size": 7168, "intermediate_size": 18432, "moe_intermediate_size": 2048,
    "n_routed_experts": 256, "num_experts_per_tok": 8, "n_shared_experts": 1,
    "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128, "v_head_dim": 128, "first_k_dense_replace": 3})");
  auto d = SynthSpecFromHfConfig(ds);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->arch, "deepseek2");
  EXPECT_EQ(d->leading_dense, 3);
  EXPECT_EQ(d->n_ff_shexp, 2048);
  const json oss = json::parse(R"({"model_type": "gpt_oss", "num_hidden_layers": 24,
    "hidden_size": 2880, "intermediate_size": 2880, "num_local_experts": 32,
    "num_experts_per_tok": 4, "num_attention_heads": 64, "num_key_value_heads": 8,
    "head_dim": 64, "vocab_size": 201088, "sliding_window": 128})");
  auto g = SynthSpecFromHfConfig(oss);
  ASSERT_TRUE(g.ok()) << g.error().message();
  EXPECT_EQ(g->arch, "gpt-oss");
  EXPECT_EQ(g->n_expert, 32);
  EXPECT_EQ(g->sliding_window, 128);
}

TEST(SynthSpecTest, ConfigErrorsNameTheProblem) {
  auto unknown = SynthSpecFromHfConfig(json::parse(R"({"model_type": "bert"})"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind(), ErrorKind::kUnsupported);
  EXPECT_NE(unknown.error().message().find("bert"), std::string::npos);

  auto missing = SynthSpecFromHfConfig(json::parse(
      R"({"model_type": "qwen3_moe", "num_hidden_layers": 4, "hidden_size": 256,
          "num_attention_heads": 4, "vocab_size": 1000, "num_experts": 8,
          "num_experts_per_tok": 2})"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("moe_intermediate_size"), std::string::npos);

  auto bad =
      SynthSpecFromHfConfig(json::parse(R"({"model_type": "qwen3", "num_hidden_layers": "x"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("num_hidden_layers"), std::string::npos);
  EXPECT_FALSE(SynthSpecFromHfConfig(json::array()).ok());
}

// Issue 8: configs that divided by zero, overflowed or wrapped in a u32.
TEST(SynthSpecTest, AbsurdConfigsAreErrorsNamingTheField) {
  const json base = json::parse(R"({"model_type": "qwen3_moe", "num_hidden_layers": 4,
      "hidden_size": 256, "moe_intermediate_size": 256, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "num_experts": 4,
      "num_experts_per_tok": 2})");
  ASSERT_TRUE(SynthSpecFromHfConfig(base).ok());
  struct Case {
    json patch;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{{"num_experts", 0}}, "0 experts"},
      {{{"num_experts_per_tok", 8}}, "8 used of 4 experts"},
      {{{"head_dim", int64_t{1} << 62}}, "head size"},
      {{{"hidden_size", int64_t{1} << 40}}, "hidden size"},
      {{{"max_position_embeddings", -1}}, "max_position_embeddings"},
      {{{"max_position_embeddings", int64_t{1} << 33}}, "training context"},
      {{{"first_k_dense_replace", -2}}, "first_k_dense_replace"},
      {{{"num_key_value_heads", 3}}, "not a multiple"},
      {{{"n_shared_experts", int64_t{1} << 40}, {"moe_intermediate_size", int64_t{1} << 40}},
       "outside"},
      {{{"num_hidden_layers", 100001}}, "layers 100001"},
      {{{"rope_theta", 1e300}}, "rope_theta"},
      {{{"partial_rotary_factor", 0}}, "partial_rotary_factor"},
      {{{"vocab_size", 18446744073709551615u}}, "vocab_size"},
  };
  for (const auto& c : cases) {
    json config = base;
    config.update(c.patch);
    auto r = SynthSpecFromHfConfig(config);
    ASSERT_FALSE(r.ok()) << c.patch.dump();
    EXPECT_NE(r.error().message().find(c.needle), std::string::npos)
        << c.patch.dump() << ": " << r.error().message();
  }
  // A hybrid model needs its full-attention interval.
  json next = base;
  next.update({{"model_type", "qwen3_next"},
               {"full_attention_interval", 0},
               {"linear_conv_kernel_dim", 4},
               {"linear_key_head_dim", 64},
               {"linear_num_key_heads", 2},
               {"linear_num_value_heads", 4}});
  next["shared_expert_intermediate_size"] = 256;
  auto r = SynthSpecFromHfConfig(next);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("full-attention interval"), std::string::npos)
      << r.error().message();
  // The fuzzer's finding: a Qwen3.5 config without the shared expert's width
  // made zero-width tensors, and `synth --dry-run` divided by zero (SIGFPE).
  next["full_attention_interval"] = 4;
  next.erase("shared_expert_intermediate_size");
  auto no_shared = SynthSpecFromHfConfig(next);
  ASSERT_FALSE(no_shared.ok());
  EXPECT_NE(no_shared.error().message().find("shared expert"), std::string::npos)
      << no_shared.error().message();
  SynthSpec zero = *SynthPreset("qwen35moe");
  zero.n_ff_shexp = 0;
  EXPECT_FALSE(ValidateSynthSpec(zero).ok());
}

TEST(SynthSpecTest, EveryFieldIsRangeChecked) {
  SynthSpec s = *SynthPreset("qwen3moe");
  ASSERT_TRUE(ValidateSynthSpec(s).ok());
  SynthSpec t = s;
  t.n_ctx_train = -1;
  EXPECT_FALSE(ValidateSynthSpec(t).ok());
  t = s;
  t.leading_dense = -1;
  EXPECT_FALSE(ValidateSynthSpec(t).ok());
  t = s;
  t.n_layer = kMaxLayers + 1;
  EXPECT_FALSE(ValidateSynthSpec(t).ok());
  t = s;
  t.ssm_dt_rank = int64_t{1} << 40;  // its product with the state size overflowed
  EXPECT_FALSE(ValidateSynthSpec(t).ok());
  t = s;
  t.n_layer = kMaxLayers;
  EXPECT_TRUE(ValidateSynthSpec(t).ok());
}

}  // namespace
}  // namespace moetune
