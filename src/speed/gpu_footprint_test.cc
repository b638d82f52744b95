#include "speed/gpu_footprint.h"

#include <gtest/gtest.h>

#include "plan/placement.h"
#include "speed/speed_test_util.h"

namespace moetune {
namespace {

TEST(GpuFootprintTest, CachedPlansGiveTheSameFootprint) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const ModelShape shape = BuildModelShape(m);
  FootprintPlans plans;
  const MachineSpec gpu = PresetMachine("rtx4090-24g");
  for (int n : {0, 20, 48}) {
    auto res = ResolveResidency(m, shape, 99, n, "", true);
    ASSERT_TRUE(res.ok());
    for (int depth : {0, 4096, 30000}) {
      RunSettings r;
      r.n_cpu_moe = n;
      r.n_ctx = 32768;
      r.n_depth = depth;
      const GpuFootprint a = ComputeGpuFootprint(m, shape, *res, r, &*gpu.accel());
      const GpuFootprint b = ComputeGpuFootprint(m, shape, *res, r, &*gpu.accel(), &plans);
      EXPECT_EQ(a.weights, b.weights);
      EXPECT_EQ(a.kv, b.kv);
      EXPECT_EQ(a.kv_used, b.kv_used);
      EXPECT_EQ(a.compute, b.compute);
      EXPECT_EQ(a.touched(), b.touched());
      EXPECT_GT(b.weights, 0);
      // The CUDA runtime is part of what the GPU holds.
      EXPECT_EQ(b.runtime, kCudaRuntimeBytes);
      EXPECT_EQ(b.touched(), b.runtime + b.weights + b.kv_used + b.state + b.compute);
    }
  }
}

TEST(GpuFootprintTest, OnePlanPerContext) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  FootprintPlans plans;
  RunSettings r;
  r.n_ctx = 8192;
  const auto a = plans.Get(m, FootprintContext(r));
  r.n_depth = 5000;  // the same allocated context
  const auto b = plans.Get(m, FootprintContext(r));
  r.n_ctx = 16384;
  const auto d = plans.Get(m, FootprintContext(r));
  ASSERT_TRUE(a && d);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_NE(a.get(), d.get());
  // llama-bench's context (no n_ctx) follows the test's size.
  RunSettings bench;
  bench.n_prompt = 512;
  bench.n_depth = 4096;
  EXPECT_EQ(FootprintContext(bench).n_ctx, 512 + 4096);
}

}  // namespace
}  // namespace moetune
