#include "model/compute_buffers.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "model/models_test_util.h"

namespace moetune {
namespace {

constexpr double kMiB = 1 << 20;

struct Anchor {
  const char* preset;
  int64_t n_ctx;
  int64_t n_ubatch;
  bool flash_attn;
  int n_seq;
  double engine_mib;  // "sched_reserve: CPU compute buffer size = X MiB"
};

// The host compute buffer of the real (full-scale) shapes, as the installed
// engine (Debian's llama.cpp 0.7.0, build 11669) reports it in the verbose log
// of `llama-fit-params -m M -c C -ub U -b max(U,2048) -fa F -np N -fitp on
// -fit off -lm none --no-repack -v` for moetune's synth files; the
// integration test tests/integration/memory_matrix_test.cc re-measures them.
const Anchor kAnchors[] = {
    {"qwen3moe", 4096, 512, true, 1, 320.77},
    {"qwen3moe", 131072, 2048, false, 1, 33944.06},
    {"deepseek2", 131072, 512, false, 1, 33430.02},
    {"deepseek2", 4096, 2048, true, 4, 1628.06},
    {"qwen35moe", 32768, 2048, true, 1, 2148.10},
    {"qwen3next", 32768, 512, false, 4, 338.77},
    {"gpt-oss-20b", 131072, 512, false, 1, 16689.64},
    {"gpt-oss-120b", 32768, 2048, true, 4, 1724.61},
    {"llama", 4096, 512, true, 1, 274.52},
    {"mixtral", 32768, 2048, true, 1, 960.08},
    {"glm4moe", 32768, 2048, false, 4, 6576.06},
    {"llama4", 131072, 512, true, 1, 581.15},
    {"qwen2", 4096, 512, false, 4, 308.02},
    {"qwen3", 32768, 2048, true, 1, 1355.08},
};

class ComputeAnchorTest : public ::testing::TestWithParam<Anchor> {};

TEST_P(ComputeAnchorTest, HostComputeMatchesTheEngine) {
  const Anchor a = GetParam();
  const GgufModel m = SynthHeaderModel(a.preset);
  auto arch = AnalyzeArchitecture(m);
  ASSERT_TRUE(arch.ok());
  ContextParams cp;
  cp.n_ctx = a.n_ctx;
  cp.n_ubatch = a.n_ubatch;
  cp.n_batch = std::max<int64_t>(a.n_ubatch, 2048);
  cp.flash_attn = a.flash_attn;
  cp.n_seq = a.n_seq;
  auto c = EstimateHostOnlyCompute(m, *arch, cp);
  ASSERT_TRUE(c.ok()) << c.error().message();
  // The engine prints two decimals.
  EXPECT_NEAR(static_cast<double>(*c) / kMiB, a.engine_mib, 0.006);
}

INSTANTIATE_TEST_SUITE_P(Engine, ComputeAnchorTest, ::testing::ValuesIn(kAnchors),
                         [](const auto& param_info) {
                           std::string n = fmt::format(
                               "{}_{}_{}_{}_{}", param_info.param.preset, param_info.param.n_ctx,
                               param_info.param.n_ubatch,
                               param_info.param.flash_attn ? "fa" : "nofa", param_info.param.n_seq);
                           for (auto& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

// llama-server reserves one output per slot: most of the logits go.
TEST(ComputeBuffers, ServerReservesFewerOutputs) {
  const GgufModel m = SynthHeaderModel("qwen3moe");
  auto arch = AnalyzeArchitecture(m);
  ASSERT_TRUE(arch.ok());
  ContextParams cp;
  const int64_t all = *EstimateHostOnlyCompute(m, *arch, cp);
  cp.reserve_outputs = ReserveOutputs::kPerSequence;
  const int64_t one = *EstimateHostOnlyCompute(m, *arch, cp);
  EXPECT_LT(one, all - int64_t{150} * (1 << 20));  // logits of 512 tokens x 151936 vocab: ~297 MiB
}

TEST(ComputeBuffers, DeviceAndHostSplitFollowsThePlacement) {
  const GgufModel m = SynthHeaderModel("qwen3moe");
  auto arch = AnalyzeArchitecture(m);
  ASSERT_TRUE(arch.ok());
  ContextParams cp;
  WeightPlacement p;
  p.has_device = true;
  p.n_gpu_layers = 99;
  auto gpu_experts = EstimateComputeBuffers(m, *arch, cp, p, DeviceKind::kRpc);
  p.n_cpu_moe = 10;
  auto cpu_experts = EstimateComputeBuffers(m, *arch, cp, p, DeviceKind::kRpc);
  ASSERT_TRUE(gpu_experts.ok() && cpu_experts.ok());
  // Experts on the CPU: their activations live in the host buffer and the
  // graph splits around them.
  EXPECT_GT(cpu_experts->host, gpu_experts->host);
  EXPECT_GT(cpu_experts->n_splits, gpu_experts->n_splits);
  EXPECT_GT(gpu_experts->device, 0);
}

// llama.cpp's rule: several devices, every layer and the output offloaded,
// no tensor override.
TEST(ComputeBuffers, PipelineParallelismNeedsSeveralDevicesAndNoOverride) {
  constexpr int kLayers = 48;
  WeightPlacement p;
  p.has_device = true;
  p.n_gpu_layers = 99;
  EXPECT_FALSE(PipelineParallel(p, kLayers)) << "one device";
  p.split = {24, 25};
  EXPECT_TRUE(PipelineParallel(p, kLayers));
  WeightPlacement partial = p;
  partial.n_gpu_layers = kLayers;  // the output and the last 47 layers
  EXPECT_FALSE(PipelineParallel(partial, kLayers));
  WeightPlacement cpu_moe = p;
  cpu_moe.n_cpu_moe = 1;
  EXPECT_FALSE(PipelineParallel(cpu_moe, kLayers));
  WeightPlacement ot = p;
  ASSERT_TRUE(ot.SetRules({{"matches_nothing", kHostDevice}}).ok());
  EXPECT_FALSE(PipelineParallel(ot, kLayers)) << "any -ot rule, even one matching nothing";
}

// Qwen3-30B-A3B at 8K over two RPC devices, -ngl 99 -ts 24,25: the engine
// (llama.cpp 0.7.0) logs "pipeline parallelism enabled" and reserves 168.05,
// 364.80 and 72.08 MiB (RPC0, RPC1, CPU); with an -ot rule that matches no
// tensor it does not, and reserves 92.01, 300.75 and 24.02 MiB
// (llama-fit-params -c 8192 -ub 512 -b 2048 -fa on -fitp on -fit off -lm none
// --no-repack -v over two ggml-rpc-servers).
TEST(ComputeBuffers, PipelineParallelismAcrossTwoRpcDevicesMatchesTheEngine) {
  const GgufModel m = SynthHeaderModel("qwen3moe");
  auto arch = AnalyzeArchitecture(m);
  ASSERT_TRUE(arch.ok());
  ContextParams cp;
  cp.n_ctx = 8192;
  WeightPlacement p;
  p.has_device = true;
  p.n_gpu_layers = 99;
  p.split = {24, 25};
  auto expect = [&](const WeightPlacement& wp, double rpc0, double rpc1, double cpu) {
    auto c = EstimateComputeBuffers(m, *arch, cp, wp, DeviceKind::kRpc);
    ASSERT_TRUE(c.ok()) << c.error().message();
    ASSERT_EQ(c->per_device.size(), 2u);
    EXPECT_NEAR(static_cast<double>(c->per_device[0]) / kMiB, rpc0, 0.006);
    EXPECT_NEAR(static_cast<double>(c->per_device[1]) / kMiB, rpc1, 0.006);
    EXPECT_NEAR(static_cast<double>(c->host) / kMiB, cpu, 0.006);
  };
  expect(p, 168.05, 364.80, 72.08);
  ASSERT_TRUE(p.SetRules({{"nomatchxyz", kHostDevice}}).ok());
  expect(p, 92.01, 300.75, 24.02);
}

}  // namespace
}  // namespace moetune
