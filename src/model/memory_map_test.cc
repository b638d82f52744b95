#include "model/memory_map.h"

#include <gtest/gtest.h>

#include "gguf/ggml_type.h"
#include "model/test_models.h"

namespace moetune {
namespace {

ModelArch Analyze(const GgufModel& m) {
  auto a = AnalyzeArchitecture(m);
  EXPECT_TRUE(a.ok());
  return a.ok() ? *a : ModelArch{};
}

// Hand computation from the Qwen3.5-35B-A3B shape (models.md): 10 full
// attention layers x 2 KV heads x 256 head dim x (K + V) x 2 bytes (f16)
// = 20480 bytes per token; 30 Gated DeltaNet layers hold
// (conv_kernel-1)*(inner + 2*groups*state) + state*inner f32 values each.
TEST(ContextMemory, Qwen35At32KMatchesHandComputation) {
  GgufModel m = SynthHeaderModel("qwen35moe");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 32768;
  ContextMemory cm = ComputeContextMemory(a, cp);
  const int64_t per_token = 10LL * 2 * 256 * 2 * 2;
  EXPECT_EQ(per_token, 20480);
  EXPECT_EQ(KvBytesPerToken(a), per_token);
  EXPECT_EQ(cm.kv_bytes, per_token * 32768);  // 640 MiB
  EXPECT_EQ(cm.kv_bytes, 640LL << 20);
  const int64_t state = 30LL * ((4 - 1) * (4096 + 2 * 16 * 128) + 128 * 4096) * 4;
  EXPECT_EQ(cm.state_bytes, state);  // ~62.8 MiB, the "~66 MB" of models.md
  EXPECT_NEAR(static_cast<double>(state) / 1e6, 65.9, 0.1);
}

TEST(ContextMemory, PadsContextTo256AndScalesStateWithSequences) {
  GgufModel m = SynthHeaderModel("qwen35moe");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 1000;  // padded to 1024
  ContextMemory one = ComputeContextMemory(a, cp);
  EXPECT_EQ(one.n_ctx_padded, 1024);
  EXPECT_EQ(one.kv_bytes, 20480LL * 1024);
  cp.n_seq = 4;
  ContextMemory four = ComputeContextMemory(a, cp);
  EXPECT_EQ(four.kv_bytes, one.kv_bytes);  // unified KV: shared cells
  EXPECT_EQ(four.state_bytes, 4 * one.state_bytes);
}

TEST(ContextMemory, QuantizedCacheUsesBlockSizes) {
  GgufModel m = SynthHeaderModel("qwen3moe");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 4096;
  const int64_t f16 = ComputeContextMemory(a, cp).kv_bytes;
  cp.type_k = cp.type_v = ggml_type::kQ8_0;
  const int64_t q8 = ComputeContextMemory(a, cp).kv_bytes;
  EXPECT_EQ(q8 * 64, f16 * 34);  // q8_0: 34 bytes per 32 values vs 64 bytes
  // Qwen3-30B-A3B: 48 layers x 4 KV heads x 128 x 2 x 2 bytes = 96 KiB per token.
  EXPECT_EQ(KvBytesPerToken(a), 96 * 1024);
}

TEST(ContextMemory, SlidingWindowLayersAreCapped) {
  GgufModel m = SynthHeaderModel("gpt-oss-120b");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 32768;
  ContextMemory cm = ComputeContextMemory(a, cp);
  for (const auto& l : cm.layers) {
    if (l.layer % 2 == 0)
      EXPECT_EQ(l.cells, 768);  // pad(128 + 512, 256)
    else
      EXPECT_EQ(l.cells, 32768);
  }
  // 18 full layers x 8 heads x 64 x 2 x 2 bytes = 36 KiB per token.
  EXPECT_EQ(KvBytesPerToken(a), 36 * 1024);
  cp.swa_full = true;
  EXPECT_GT(ComputeContextMemory(a, cp).kv_bytes, cm.kv_bytes);
}

TEST(WeightMap, SumsMatchTensorBytesAndExpertsDominate) {
  GgufModel m = SynthHeaderModel("qwen3moe");
  ModelArch a = Analyze(m);
  WeightMap wm = ComputeWeightMap(m, a);
  EXPECT_EQ(static_cast<uint64_t>(wm.total), m.tensor_bytes());
  int64_t sum = Sum(wm.global);
  for (const auto& l : wm.layers) sum += l.total();
  EXPECT_EQ(sum, wm.total);
  EXPECT_GT(wm.expert_total(), wm.total * 8 / 10);
  // 8 of 128 experts per token: a few GB of ~17 GB.
  EXPECT_LT(wm.bytes_per_token, wm.total / 5);
  EXPECT_GT(wm.bytes_per_token, wm.total - wm.expert_total());
}

TEST(ComputeEstimate, GrowsWithContextAndUbatch) {
  GgufModel m = SynthHeaderModel("qwen3moe", "tiny");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 4096;
  const int64_t c4 = EstimateCompute(a, cp).total();
  cp.n_ctx = 32768;
  const int64_t c32 = EstimateCompute(a, cp).total();
  EXPECT_EQ(c32 - c4, (32768 - 4096) * 512 * 2);  // the f16 KQ mask
  cp.flash_attn = false;
  EXPECT_GT(EstimateCompute(a, cp).total(), c32);
  cp.flash_attn = true;
  cp.n_ubatch = 2048;
  EXPECT_GT(EstimateCompute(a, cp).total(), c32);
}

}  // namespace
}  // namespace moetune
