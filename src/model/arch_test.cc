#include "model/arch.h"

#include <gtest/gtest.h>

#include "model/models_test_util.h"

namespace moetune {
namespace {

TEST(ClassifyTensor, Roles) {
  EXPECT_EQ(ClassifyTensor("token_embd.weight", false).role, TensorRole::kTokenEmbedding);
  EXPECT_EQ(ClassifyTensor("output.weight", false).role, TensorRole::kOutput);
  EXPECT_EQ(ClassifyTensor("output_norm.weight", false).role, TensorRole::kNorm);
  auto e = ClassifyTensor("blk.12.ffn_up_exps.weight", false);
  EXPECT_EQ(e.layer, 12);
  EXPECT_EQ(e.role, TensorRole::kRoutedExperts);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_gate_up_exps.weight", false).role,
            TensorRole::kRoutedExperts);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_down_exps.bias", false).role, TensorRole::kRoutedExperts);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_gate_inp.weight", false).role, TensorRole::kRouter);
  EXPECT_EQ(ClassifyTensor("blk.3.exp_probs_b.bias", false).role, TensorRole::kRouter);
  EXPECT_EQ(ClassifyTensor("blk.3.ffn_gate_inp_shexp.weight", false).role,
            TensorRole::kSharedExperts);
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

// Issue 8: crafted widths are errors naming the problem, not wrapped sizes.
TEST(AnalyzeArchitecture, ImplausibleWidthsAreErrors) {
  GgufModel m = SynthHeaderModel("qwen3moe", "tiny");
  m.parts[0].metadata.Set("qwen3moe.attention.key_length", GgufValue::U32(0xffffffffu));
  auto a = AnalyzeArchitecture(m);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind(), ErrorKind::kFormat);
  EXPECT_NE(a.error().message().find("implausible"), std::string::npos) << a.error().message();
  GgufModel h = SynthHeaderModel("qwen3moe", "tiny");
  h.parts[0].metadata.Set("qwen3moe.attention.head_count_kv", GgufValue::I32(-3));
  EXPECT_FALSE(AnalyzeArchitecture(h).ok());
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

namespace moetune {
namespace {

struct PresetExpectation {
  const char* preset;
  int n_layer;
  int dense_layers;     // layers without routed experts
  AttentionKind kind0;  // layer 0's attention kind
  int full_layers;      // layers whose KV grows with context (full or MLA)
};

class PresetArchTest : public ::testing::TestWithParam<PresetExpectation> {};

TEST_P(PresetArchTest, LayerKindsMatchTheRealModel) {
  const PresetExpectation& e = GetParam();
  GgufModel m = SynthHeaderModel(e.preset);
  auto a = AnalyzeArchitecture(m);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(a->known_arch) << a->hp.arch;
  ASSERT_EQ(static_cast<int>(a->layers.size()), e.n_layer);
  int dense = 0, growing = 0;
  for (const auto& l : a->layers) {
    dense += !l.moe;
    growing += l.attention == AttentionKind::kFull || l.attention == AttentionKind::kMla;
  }
  EXPECT_EQ(dense, e.dense_layers);
  EXPECT_EQ(a->layers[0].attention, e.kind0);
  EXPECT_EQ(growing, e.full_layers);
  // Every tensor has a role; nothing of a real model's weight is "other"
  // except MTP heads and rope factors.
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    if (a->tensors[i].role == TensorRole::kOther) {
      EXPECT_TRUE(m.tensors[i].name.find("nextn") != std::string::npos ||
                  m.tensors[i].name.find("rope") != std::string::npos)
          << m.tensors[i].name;
    }
  }
}

// Shapes from shared/docs/models.md.
INSTANTIATE_TEST_SUITE_P(
    Presets, PresetArchTest,
    ::testing::Values(PresetExpectation{"qwen3moe", 48, 0, AttentionKind::kFull, 48},
                      PresetExpectation{"qwen35moe", 40, 0, AttentionKind::kRecurrent, 10},
                      PresetExpectation{"qwen3next", 48, 0, AttentionKind::kRecurrent, 12},
                      PresetExpectation{"gpt-oss-20b", 24, 0, AttentionKind::kSlidingWindow, 12},
                      PresetExpectation{"glm4moe", 46, 1, AttentionKind::kFull, 46},
                      PresetExpectation{"deepseek2", 61, 3, AttentionKind::kMla, 61},
                      PresetExpectation{"mixtral", 32, 0, AttentionKind::kFull, 32},
                      PresetExpectation{"llama4", 48, 0, AttentionKind::kChunked, 12},
                      PresetExpectation{"llama", 16, 16, AttentionKind::kFull, 16},
                      PresetExpectation{"qwen2", 24, 24, AttentionKind::kFull, 24},
                      PresetExpectation{"qwen3", 28, 28, AttentionKind::kFull, 28}),
    [](const ::testing::TestParamInfo<PresetExpectation>& p) {
      std::string n = p.param.preset;
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

TEST(PresetKv, DeepSeekMlaCachesLatentOnly) {
  GgufModel m = SynthHeaderModel("deepseek2");
  auto a = AnalyzeArchitecture(m);
  ASSERT_TRUE(a.ok());
  // 576 values (512 latent + 64 rope) per layer and token, no V cache (models.md).
  EXPECT_EQ(a->layers[0].n_embd_k_gqa, 576u);
  EXPECT_EQ(a->layers[0].n_embd_v_gqa, 0u);
}

}  // namespace
}  // namespace moetune
