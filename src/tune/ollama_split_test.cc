#include "tune/ollama_split.h"

#include <gtest/gtest.h>

#include "speed/speed_test_util.h"
#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

class OllamaSplitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = LoadModelInfo(WriteSparsePreset("qwen3moe", dir.File("qwen3moe.gguf")));
    ASSERT_TRUE(m.ok()) << m.error().message();
    model = std::move(m).value();
    cpu.physical_cores = 8;
  }
  PlanRequest Gpu(int64_t free) const {
    PlanRequest r;
    r.vram_free = free;
    r.ctx.n_ctx = 8192;
    return r;
  }
  testing::TempDir dir;
  ModelInfo model;
  CpuTopology cpu;
};

TEST_F(OllamaSplitTest, WholeLayersAsManyAsFitWithOllamasReserves) {
  const int n_layer = static_cast<int>(model.weights.layers.size());
  auto s = OllamaWholeLayerSplit(model, Gpu(12 * kGiB), &cpu);
  ASSERT_TRUE(s.has_value());
  // A 30B-A3B model at Q4 does not fit 12 GiB: some layers, not all.
  EXPECT_GT(s->layers, 0);
  EXPECT_LT(s->layers, n_layer);
  EXPECT_EQ(s->config.placement.n_gpu_layers, s->layers);
  EXPECT_EQ(s->config.placement.n_cpu_moe, -1);  // no expert placement
  EXPECT_EQ(s->config.flash_attn, FlashAttn::kOff);
  EXPECT_EQ(s->config.n_batch, 512);
  EXPECT_EQ(s->config.threads, 8);
  EXPECT_EQ(s->config.ctx_size, 8192);
  EXPECT_NE(s->how.find("whole layers"), std::string::npos) << s->how;

  // The split fits with Ollama's reserves, one layer more does not.
  const PlanRequest req = Gpu(12 * kGiB);
  auto at = PlanServerConfig(model.gguf, model.arch, model.weights, req, s->config);
  ServerConfig more = s->config;
  more.placement.n_gpu_layers += 1;
  auto above = PlanServerConfig(model.gguf, model.arch, model.weights, req, more);
  ASSERT_TRUE(at.ok() && above.ok());
  const int64_t extra = model.weights.layers.front().total() + kOllamaMinimumMemory;
  EXPECT_LE(at->gpu.total() + extra, 12 * kGiB);
  EXPECT_GT(above->gpu.total() + extra + above->gpu.kv / (s->layers + 1), 12 * kGiB);

  // Less memory, fewer layers; held by others counts as not free.
  auto small = OllamaWholeLayerSplit(model, Gpu(8 * kGiB), &cpu);
  ASSERT_TRUE(small.has_value());
  EXPECT_LT(small->layers, s->layers);
  PlanRequest shared = Gpu(12 * kGiB);
  shared.reserve = 4 * kGiB;
  auto reserved = OllamaWholeLayerSplit(model, shared, &cpu);
  ASSERT_TRUE(reserved.has_value());
  EXPECT_EQ(reserved->layers, small->layers);
}

TEST_F(OllamaSplitTest, ABigCardTakesTheOutputLayerTooAndNoGpuHasNoSplit) {
  const int n_layer = static_cast<int>(model.weights.layers.size());
  auto big = OllamaWholeLayerSplit(model, Gpu(80 * kGiB), &cpu);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->layers, n_layer + 1);
  EXPECT_NE(big->how.find("output layer"), std::string::npos) << big->how;
  EXPECT_FALSE(OllamaWholeLayerSplit(model, Gpu(0), &cpu).has_value());
  // Less than Ollama's own minimum: nothing on the GPU.
  auto tiny = OllamaWholeLayerSplit(model, Gpu(256 << 20), &cpu);
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(tiny->layers, 0);
}

}  // namespace
}  // namespace moetune
