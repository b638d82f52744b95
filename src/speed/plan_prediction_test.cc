#include "speed/plan_prediction.h"

#include <gtest/gtest.h>

#include "speed/speed_test_util.h"

namespace moetune {
namespace {

PlanRequest Request(int64_t vram, int64_t ctx) {
  PlanRequest r;
  r.vram_free = vram;
  r.ctx.n_ctx = ctx;
  return r;
}

TEST(PlanPrediction, BestSafeOptionFitsAndIsFastestWithinTies) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const MachineSpec spec = PresetMachine("rtx4070-12g,ddr5-6000-2ch,8c16t");
  const PlanRequest req = Request(spec.accel()->vram_free, 32768);
  const Plan plan = PlanPlacement(m.gguf, m.arch, m.weights, req).value();
  auto p = PredictPlan(m, plan, req, spec, CalibrationConstants{});
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->options.size(), plan.options.size());
  ASSERT_TRUE(p->best.has_value());
  const auto& best = p->options[*p->best];
  EXPECT_TRUE(best.fits);
  for (const auto& o : p->options) {
    if (o.fits) {
      EXPECT_GE(o.workload_seconds, best.workload_seconds / 1.02 - 1e-9);
    }
    // Deeper context is never faster.
    if (o.target.loads) {
      EXPECT_LE(o.target.decode.tokens_per_second, o.depth0.decode.tokens_per_second);
    }
  }
  // Options that do not fit the GPU at all fail to load in the prediction too.
  EXPECT_FALSE(p->options.front().depth0.loads);
}

TEST(PlanPrediction, CpuOnlyMachineSaysPlacementDoesNotMatter) {
  const ModelInfo m = SynthModelInfo("qwen3moe", "tiny");
  const MachineSpec spec = PresetMachine("no-gpu,ddr4-3200-2ch,8c16t");
  const PlanRequest req = Request(int64_t{1} << 30, 4096);
  const Plan plan = PlanPlacement(m.gguf, m.arch, m.weights, req).value();
  auto p = PredictPlan(m, plan, req, spec, CalibrationConstants{});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->placement_matters);
  ASSERT_FALSE(p->notes.empty());
  for (const auto& o : p->options)
    EXPECT_DOUBLE_EQ(o.depth0.decode.tokens_per_second,
                     p->options[0].depth0.decode.tokens_per_second);
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

TEST(PlanPrediction, FirstLoadingNMatchesThePlansBoundary) {
  const ModelInfo m = SynthModelInfo("qwen35moe");
  MachineSpec spec = PresetMachine("rtx4070-12g,ddr5-6000-2ch,8c16t");
  spec.spill = SpillMode::kSilent;  // the boundary is a strict-mode notion either way
  RunSettings proto = Prefill(0);
  proto.n_ctx = 32768;
  const auto n = FirstLoadingNCpuMoe(SpeedModel(m, spec), proto);
  ASSERT_TRUE(n.has_value());
  // The plan sizes llama.cpp's buffers; the CUDA runtime takes its share first.
  PlanRequest req = Request(spec.accel()->vram_free, 32768);
  req.reserve = spec.accel()->runtime_bytes;
  req.margin = 0;
  const Plan plan = PlanPlacement(m.gguf, m.arch, m.weights, req).value();
  ASSERT_TRUE(plan.smallest_fitting.has_value());
  EXPECT_EQ(*n, plan.options[*plan.smallest_fitting].n_cpu_moe);
  // A card too small for even the non-expert weights: nothing loads.
  spec.accel()->vram_free = int64_t{256} << 20;
  EXPECT_FALSE(FirstLoadingNCpuMoe(SpeedModel(m, spec), proto).has_value());
}

}  // namespace
}  // namespace moetune
