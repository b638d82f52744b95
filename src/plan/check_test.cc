#include "plan/check.h"

#include <gtest/gtest.h>

#include "model/models_test_util.h"

namespace moetune {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(WithinTolerance, AllowsTheEnginesTruncationAndTheRelativeBand) {
  EXPECT_TRUE(
      WithinTolerance(260 * kMiB + kMiB * 9 / 10, 260 * kMiB, 0.01));  // 260.9 printed as 260
  EXPECT_TRUE(WithinTolerance(100 * kMiB, 100 * kMiB, 0.0));
  EXPECT_FALSE(WithinTolerance(105 * kMiB, 100 * kMiB, 0.01));
  EXPECT_FALSE(WithinTolerance(95 * kMiB, 100 * kMiB, 0.01));
  EXPECT_TRUE(WithinTolerance(112 * kMiB, 100 * kMiB, 0.15));
  EXPECT_FALSE(WithinTolerance(120 * kMiB, 100 * kMiB, 0.15));
}

struct Fix {
  GgufModel gguf;
  ModelArch arch;
  WeightMap wm;
  PlanRequest req;
  Plan plan;
};

Fix Make() {
  Fix f;
  f.gguf = SynthHeaderModel("qwen3moe");
  f.arch = *AnalyzeArchitecture(f.gguf);
  f.wm = ComputeWeightMap(f.gguf, f.arch);
  f.req.vram_free = 12LL << 30;
  f.req.ctx.n_ctx = 8192;
  f.plan = *PlanPlacement(f.gguf, f.arch, f.wm, f.req);
  return f;
}

EngineDeviceSizes Dev(const std::string& name, int64_t m, int64_t c, int64_t k) {
  return {name, m, c, k};
}

int64_t Floor(int64_t b) { return b / kMiB * kMiB; }  // as the engine prints

TEST(ComparePlanWithEngine, DeviceAndHostLinesAreComparedWithTheirSide) {
  Fix f = Make();
  ASSERT_TRUE(f.plan.config);
  // The RPC rule (no op offload) is what the check uses for an RPC0 line.
  WeightPlacement wp = f.plan.chosen->placement;
  auto o = EvaluatePlacement(f.gguf, f.arch, f.wm, f.req.ctx, wp, {DeviceKind::kRpc});
  ASSERT_TRUE(o.ok());
  std::vector<EngineDeviceSizes> devs = {
      Dev("RPC0", Floor(o->gpu.weights_total()), Floor(o->gpu.kv + o->gpu.state),
          Floor(o->gpu.compute)),
      Dev("Host", Floor(o->host.weights_total()), Floor(o->host.kv + o->host.state),
          Floor(o->host.compute))};
  auto c = ComparePlanWithEngine(f.gguf, f.arch, f.wm, *f.plan.config, devs);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->rows.size(), 2u);
  EXPECT_EQ(c->rows[0].side, "gpu");
  EXPECT_EQ(c->rows[1].side, "host");
  EXPECT_EQ(c->device_kind, "RPC");
  EXPECT_TRUE(c->agrees());
  EXPECT_TRUE(c->notes.empty());
  // An engine whose device context is 10% larger: flagged.
  devs[0].context = Floor(o->gpu.kv + o->gpu.state) * 11 / 10;
  auto bad = ComparePlanWithEngine(f.gguf, f.arch, f.wm, *f.plan.config, devs);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->agrees());
  EXPECT_FALSE(bad->rows[0].context_ok);
  EXPECT_TRUE(bad->rows[0].model_ok);
}

TEST(ComparePlanWithEngine, NoDeviceMeansAllHostWithANote) {
  Fix f = Make();
  const ContextMemory cm = *ComputeContextMemory(f.arch, f.req.ctx);
  const int64_t compute = *EstimateHostOnlyCompute(f.gguf, f.arch, f.req.ctx);
  std::vector<EngineDeviceSizes> devs = {
      Dev("Host", Floor(f.wm.total), Floor(cm.total()), Floor(compute))};
  auto c = ComparePlanWithEngine(f.gguf, f.arch, f.wm, *f.plan.config, devs);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->rows.size(), 1u);
  EXPECT_EQ(c->rows[0].side, "all-host");
  EXPECT_TRUE(c->agrees());
  ASSERT_EQ(c->notes.size(), 1u);
  EXPECT_NE(c->notes[0].find("no GPU"), std::string::npos);
}

// What an engine whose compute buffers are smaller than the rules' (0.4.0)
// produces, told apart from any other disagreement.
TEST(PlanCheck, OnlyComputeOverPredictedIsTheSafeSideOfComputeAlone) {
  CheckRow ok_row;
  ok_row.model_ok = ok_row.context_ok = ok_row.compute_ok = true;
  CheckRow over = ok_row;
  over.compute_ok = false;
  over.predicted_compute = 24 * kMiB;
  over.engine_compute = 16 * kMiB;
  PlanCheck c;
  c.rows = {ok_row, over};
  EXPECT_TRUE(c.OnlyComputeOverPredicted());
  c.rows[1].predicted_compute = 10 * kMiB;  // under: the unsafe side
  EXPECT_FALSE(c.OnlyComputeOverPredicted());
  c.rows[1] = over;
  c.rows[0].model_ok = false;  // a weight disagreement is never an engine's compute rule
  EXPECT_FALSE(c.OnlyComputeOverPredicted());
  c.rows = {ok_row};  // agreeing: nothing to explain
  EXPECT_FALSE(c.OnlyComputeOverPredicted());
}

TEST(ComparePlanWithEngine, NoDevicesNeverAgrees) {
  Fix f = Make();
  auto c = ComparePlanWithEngine(f.gguf, f.arch, f.wm, *f.plan.config, {});
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->agrees());
}

}  // namespace
}  // namespace moetune
