#include "model/arch.h"

#include <gtest/gtest.h>

#include "model/test_models.h"

namespace moetune {
namespace {

TEST(ClassifyTensor, Roles) {
  EXPECT_EQ(ClassifyTensor("token_embd.weight", false).role, TensorRole::kTokenEmbedding);
  EXPECT_EQ(ClassifyTensor("output.weight", false).role, TensorRole::kOutput);
  EXPECT_EQ(ClassifyTensor("output_norm.weight", false).role, TensorRole::kNorm);
  auto e = ClassifyTensor("blk.12.ffn_up_exps.weight", false);
  EXPECT_EQ(e.layer, 12);
  EXPECT_EQ(e.role, TensorRole::kRoutedExperts);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_gate_up_exps.weight", false).role, TensorRole::kRoutedExperts);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_down_exps.bias", false).role, TensorRole::kRoutedExperts);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_gate_inp.weight", false).role, TensorRole::kRouter);
  EXPECT_EQ(ClassifyTensor("blk.3.exp_probs_b.bias", false).role, TensorRole::kRouter);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_gate_inp_shexp.weight", false).role, TensorRole::kSharedExperts);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_down_shexp.weight", false).role, TensorRole::kSharedExperts);
  EXPECT_EQ(ClassifyTensor("blk.0.ffn_down.weight", false).role, TensorRole::kDenseFfn);
  EXPECT_EQ(ClassifyTensor("blk.0.attn_q.weight", false).role, TensorRole::kAttention);
  EXPECT_EQ(ClassifyTensor("blk.0.attn_kv_a_mqa.weight", false).role, TensorRole::kAttention);
  EXPECT_EQ(ClassifyTensor("blk.0.attn_sinks.weight", false).role, TensorRole::kAttention);
  EXPECT_EQ(ClassifyTensor("blk.0.attn_norm.weight", false).role, TensorRole::kNorm);
  EXPECT_EQ(ClassifyTensor("blk.0.attn_qkv.weight", true).role, TensorRole::kRecurrent);
  EXPECT_EQ(ClassifyTensor("blk.0.ssm_conv1d.weight", false).role, TensorRole::kRecurrent);
  EXPECT_EQ(ClassifyTensor("blk.46.nextn.eh_proj.weight", false).role, TensorRole::kOther);
  EXPECT_EQ(ClassifyTensor("blk.x.attn_q.weight", false).layer, -1);
}

TEST(AnalyzeArchitecture, Qwen35HybridPattern) {
  GgufModel m = SynthHeaderModel("qwen35moe");
  auto a = AnalyzeArchitecture(m);
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->layers.size(), 40u);
  int full = 0, rec = 0;
  for (const auto& l : a->layers) {
    EXPECT_TRUE(l.moe);
    if (l.attention == AttentionKind::kFull) {
      ++full;
      EXPECT_EQ(l.index % 4, 3) << "full attention every 4th layer";
      EXPECT_EQ(l.n_embd_k_gqa, 2u * 256u);
    } else {
      EXPECT_EQ(l.attention, AttentionKind::kRecurrent);
      ++rec;
    }
  }
  EXPECT_EQ(full, 10);
  EXPECT_EQ(rec, 30);
  EXPECT_TRUE(a->known_arch);
  EXPECT_EQ(a->hp.n_expert, 256u);
  EXPECT_EQ(a->hp.n_expert_used, 8u);
}

TEST(AnalyzeArchitecture, GptOssAlternatesSlidingWindow) {
  GgufModel m = SynthHeaderModel("gpt-oss-120b");
  auto a = AnalyzeArchitecture(m);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->layers.size(), 36u);
  for (const auto& l : a->layers) {
    if (l.index % 2 == 0) {
      EXPECT_EQ(l.attention, AttentionKind::kSlidingWindow);
      EXPECT_EQ(l.window, 128u);
    } else {
      EXPECT_EQ(l.attention, AttentionKind::kFull);
    }
  }
  EXPECT_TRUE(a->hp.expert_bias);
}

TEST(AnalyzeArchitecture, UnknownArchitectureWorksFromNamesWithWarning) {
  GgufModel m = SynthHeaderModel("qwen3moe", "tiny");
  m.parts[0].metadata.Set("general.architecture", GgufValue::Str("madeupmoe"));
  auto a = AnalyzeArchitecture(m);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->known_arch);
  ASSERT_FALSE(a->warnings.empty());
  EXPECT_NE(a->warnings[0].find("madeupmoe"), std::string::npos);
  // Layers and KV widths still come out of the tensor shapes.
  ASSERT_FALSE(a->layers.empty());
  EXPECT_GT(a->layers[0].n_embd_k_gqa, 0u);
  EXPECT_TRUE(a->layers[0].moe);
}

TEST(AnalyzeArchitecture, NoLayersIsAClearError) {
  GgufModel m;
  m.parts.emplace_back();
  auto a = AnalyzeArchitecture(m);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("no layers"), std::string::npos);
}

}  // namespace
}  // namespace moetune
