#include "model/memory_map.h"

#include <gtest/gtest.h>

#include "gguf/ggml_type.h"
#include "model/models_test_util.h"

namespace moetune {
namespace {

ModelArch Analyze(const GgufModel& m) {
  auto a = AnalyzeArchitecture(m);
  EXPECT_TRUE(a.ok());
  return a.ok() ? *a : ModelArch{};
}

ContextMemory Ctx(const ModelArch& a, const ContextParams& cp) {
  auto cm = ComputeContextMemory(a, cp);
  EXPECT_TRUE(cm.ok()) << (cm.ok() ? "" : cm.error().message());
  return cm.ok() ? *cm : ContextMemory{};
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
  ContextMemory cm = Ctx(a, cp);
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
  ContextMemory one = Ctx(a, cp);
  EXPECT_EQ(one.n_ctx_padded, 1024);
  EXPECT_EQ(one.kv_bytes, 20480LL * 1024);
  cp.n_seq = 4;
  cp.kv_unified = true;
  ContextMemory four = Ctx(a, cp);
  EXPECT_EQ(four.kv_bytes, one.kv_bytes);  // unified KV: shared cells
  EXPECT_EQ(four.state_bytes, 4 * one.state_bytes);
}

// llama-server without -kvu: one stream of GGML_PAD(n_ctx / n_seq, 256) cells
// per slot (checked against llama-fit-params: -c 4000 -np 3 gives n_ctx_seq
// 1536 and n_ctx 4608; -c 5000 -np 7 gives 768 and 5376).
TEST(ContextLayout, PerSlotStreamsArePaddedPerSlot) {
  ContextParams cp;
  cp.n_ctx = 4000;
  cp.n_seq = 3;
  auto l = LayoutContext(cp);
  ASSERT_TRUE(l.ok());
  EXPECT_FALSE(l->unified);
  EXPECT_EQ(l->n_stream, 3);
  EXPECT_EQ(l->n_ctx_seq, 1536);
  EXPECT_EQ(l->n_ctx, 4608);
  EXPECT_EQ(l->reserve_seqs, 3);
  // The reserve ubatch rounds 512 tokens up to 3 x 171; llama-fit-params keeps
  // 512 outputs, llama-server reserves one per sequence.
  EXPECT_EQ(l->reserve_tokens, 513);
  EXPECT_EQ(l->reserve_outputs, 512);
  cp.reserve_outputs = ReserveOutputs::kPerSequence;
  EXPECT_EQ(LayoutContext(cp)->reserve_outputs, 3);
  cp.reserve_outputs = ReserveOutputs::kAllTokens;
  cp.n_ctx = 5000;
  cp.n_seq = 7;
  EXPECT_EQ(LayoutContext(cp)->n_ctx_seq, 768);
  EXPECT_EQ(LayoutContext(cp)->n_ctx, 5376);
  // -c 770 -np 3: 770/3 = 256 per slot (padding the total first would give 512).
  cp.n_ctx = 770;
  cp.n_seq = 3;
  EXPECT_EQ(LayoutContext(cp)->n_ctx_seq, 256);
  cp.kv_unified = true;
  EXPECT_EQ(LayoutContext(cp)->n_stream, 1);
  EXPECT_EQ(LayoutContext(cp)->n_ctx_seq, 1024);
  EXPECT_EQ(LayoutContext(cp)->reserve_seqs, 3);  // llama-server -np 3 -kvu: "n_seqs = 3"
}

TEST(ContextLayout, BatchesAreClampedToTheContextAsLlamaCppDoes) {
  ContextParams cp;
  cp.n_ctx = 512;
  cp.n_ubatch = 4096;
  cp.n_batch = 4096;
  auto l = LayoutContext(cp);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->n_batch, 512);
  EXPECT_EQ(l->n_ubatch, 512);
  EXPECT_EQ(l->reserve_tokens, 512);
  cp.n_ctx = 1000;  // the batch is clamped to the context as given, not padded
  EXPECT_EQ(LayoutContext(cp)->n_batch, 1000);
  EXPECT_EQ(LayoutContext(cp)->n_ubatch, 1000);
  cp.n_ctx = 100;
  cp.n_batch = 2048;
  cp.n_ubatch = 512;
  EXPECT_EQ(LayoutContext(cp)->reserve_tokens, 100);
  EXPECT_EQ(LayoutContext(cp)->n_ctx, 256);
}

TEST(ContextLayout, AbsurdValuesAreErrorsNamingTheValue) {
  ContextParams cp;
  cp.n_ctx = int64_t{1} << 40;
  auto l = LayoutContext(cp);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message().find("1099511627776"), std::string::npos);
  cp.n_ctx = 4096;
  cp.n_seq = 300;
  ASSERT_FALSE(LayoutContext(cp).ok());
  EXPECT_NE(LayoutContext(cp).error().message().find("256"), std::string::npos);
  cp.n_seq = 8;
  cp.n_ctx = 4;
  EXPECT_FALSE(LayoutContext(cp).ok());  // fewer tokens than slots
  cp.n_ctx = 1000000000;
  cp.n_seq = 1;
  cp.n_ubatch = 2147483647;
  EXPECT_TRUE(LayoutContext(cp).ok());
  EXPECT_EQ(LayoutContext(cp)->n_ubatch, 2048);  // clamped to the batch
}

TEST(ContextMemory, OverflowingSizesAreErrorsNotWraps) {
  ModelArch a;
  LayerInfo l;
  l.n_embd_k_gqa = 0xffffffffu;
  l.n_embd_v_gqa = 0xffffffffu;
  a.layers = {l, l, l};
  ContextParams cp;
  cp.n_ctx = 4000000000;
  auto cm = ComputeContextMemory(a, cp);
  ASSERT_FALSE(cm.ok());
  EXPECT_NE(cm.error().message().find("overflows"), std::string::npos);
}

TEST(ContextMemory, PerSlotKvMatchesTheEngine) {
  // gpt-oss-20b shape, -c 32768 -np 4 (no -kvu): 4 streams of 8192 cells on the
  // 12 full layers, and pad(128 + 512, 256) = 768 cells per stream on the SWA
  // layers: 12 x 8 x 64 x 2 x 2 x (32768 + 3072) bytes.
  GgufModel m = SynthHeaderModel("gpt-oss-20b");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 32768;
  cp.n_seq = 4;
  ContextMemory cm = Ctx(a, cp);
  EXPECT_EQ(cm.kv_bytes, 12LL * 8 * 64 * 2 * 2 * (32768 + 4 * 768));
  cp.kv_unified = true;  // one stream: the SWA layers hold 4 windows + ubatch
  EXPECT_EQ(Ctx(a, cp).kv_bytes, 12LL * 8 * 64 * 2 * 2 * (32768 + 1024));
}

TEST(ContextMemory, QuantizedCacheUsesBlockSizes) {
  GgufModel m = SynthHeaderModel("qwen3moe");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 4096;
  const int64_t f16 = Ctx(a, cp).kv_bytes;
  cp.type_k = cp.type_v = ggml_type::kQ8_0;
  const int64_t q8 = Ctx(a, cp).kv_bytes;
  EXPECT_EQ(q8 * 64, f16 * 34);  // q8_0: 34 bytes per 32 values vs 64 bytes
  // Qwen3-30B-A3B: 48 layers x 4 KV heads x 128 x 2 x 2 bytes = 96 KiB per token.
  EXPECT_EQ(KvBytesPerToken(a), 96 * 1024);
}

TEST(ContextMemory, SlidingWindowLayersAreCapped) {
  GgufModel m = SynthHeaderModel("gpt-oss-120b");
  ModelArch a = Analyze(m);
  ContextParams cp;
  cp.n_ctx = 32768;
  ContextMemory cm = Ctx(a, cp);
  for (const auto& l : cm.layers) {
    if (l.layer % 2 == 0)
      EXPECT_EQ(l.cells, 768);  // pad(128 + 512, 256)
    else
      EXPECT_EQ(l.cells, 32768);
  }
  // 18 full layers x 8 heads x 64 x 2 x 2 bytes = 36 KiB per token.
  EXPECT_EQ(KvBytesPerToken(a), 36 * 1024);
  cp.swa_full = true;
  EXPECT_GT(Ctx(a, cp).kv_bytes, cm.kv_bytes);
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

}  // namespace
}  // namespace moetune
