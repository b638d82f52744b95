#include "plan/check.h"

#include <gtest/gtest.h>

#include "model/test_models.h"

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
  f.plan = PlanPlacement(f.gguf, f.arch, f.wm, f.req);
  return f;
}

FitParamsDevice Dev(const std::string& name, int64_t m, int64_t c, int64_t k) {
  return {name, Bytes(m), Bytes(c), Bytes(k)};
}

TEST(ComparePlanWithEngine, GpuAndHostLinesAreComparedWithTheirSide) {
  Fix f = Make();
  const PlacementOption& o = *f.plan.best();
  // An engine that agrees exactly (values floored to MiB as the engine prints them).
  auto mib = [](int64_t b) { return b / kMiB * kMiB; };
  std::vector<FitParamsDevice> devs = {
      Dev("CUDA0", mib(o.gpu.weights_total()), mib(o.gpu.kv + o.gpu.state), mib(o.gpu.compute)),
      Dev("Host", mib(o.host.weights_total()), mib(o.host.kv + o.host.state), mib(o.host.compute))};
  PlanCheck c = ComparePlanWithEngine(f.arch, f.wm, f.req, o, devs);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(c.rows[0].side, "gpu");
  EXPECT_EQ(c.rows[1].side, "host");
  EXPECT_TRUE(c.agrees());
  EXPECT_TRUE(c.notes.empty());
  // An engine whose GPU context is 10% larger: flagged.
  devs[0].context_bytes = Bytes(mib(o.gpu.kv + o.gpu.state) * 11 / 10);
  PlanCheck bad = ComparePlanWithEngine(f.arch, f.wm, f.req, o, devs);
  EXPECT_FALSE(bad.agrees());
  EXPECT_FALSE(bad.rows[0].context_ok);
  EXPECT_TRUE(bad.rows[0].model_ok);
  EXPECT_NE(PlanCheckText(bad).find(" !"), std::string::npos);
  EXPECT_FALSE(PlanCheckJson(bad)["agrees"].get<bool>());
}

TEST(ComparePlanWithEngine, NoGpuMeansAllHostWithANote) {
  Fix f = Make();
  const PlacementOption& o = *f.plan.best();
  const ContextMemory cm = ComputeContextMemory(f.arch, f.req.ctx);
  std::vector<FitParamsDevice> devs = {
      Dev("Host", f.wm.total / kMiB * kMiB, cm.total() / kMiB * kMiB,
          EstimateCompute(f.arch, f.req.ctx).total() / kMiB * kMiB)};
  PlanCheck c = ComparePlanWithEngine(f.arch, f.wm, f.req, o, devs);
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].side, "all-host");
  EXPECT_TRUE(c.agrees());
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("no GPU"), std::string::npos);
}

TEST(ComparePlanWithEngine, NoDevicesNeverAgrees) {
  Fix f = Make();
  EXPECT_FALSE(ComparePlanWithEngine(f.arch, f.wm, f.req, *f.plan.best(), {}).agrees());
}

}  // namespace
}  // namespace moetune
