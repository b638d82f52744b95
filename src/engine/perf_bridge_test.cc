#include "engine/perf_bridge.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(PerfBridge, RunConfigBecomesRunSettings) {
  RunConfig c;
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 12;
  c.placement.n_ubatch = 1024;
  c.placement.type_k = "q8_0";
  c.placement.flash_attn = "off";
  c.load_mode = "none";
  c.threads = 6;
  c.n_depth = 4096;
  c.n_gen = 64;
  auto r = RunSettingsFromConfig(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->n_cpu_moe, 12);
  EXPECT_EQ(r->n_ubatch, 1024);
  EXPECT_EQ(r->type_k, 8u);  // q8_0
  EXPECT_FALSE(r->flash_attn);
  EXPECT_TRUE(r->pinned);
  EXPECT_EQ(r->n_depth, 4096);
  c.placement.type_v = "q9_9";
  EXPECT_FALSE(RunSettingsFromConfig(c).ok());
}

TEST(PerfBridge, RecordsGiveTheBestRepetitionByDefault) {
  const std::string line =
      R"({"n_prompt":512,"n_gen":0,"n_depth":4096,"n_threads":2,"n_batch":2048,"n_ubatch":128,)"
      R"("n_gpu_layers":99,"n_cpu_moe":4,"type_k":"f16","type_v":"f16","flash_attn":-1,)"
      R"("backends":"RPC","avg_ts":100,"stddev_ts":10,"samples_ts":[90,100,110],)"
      R"("samples_ns":[1,1,1],"no_op_offload":1,"load_mode":"mmap","tensor_buft_overrides":"none"})";
  auto rec = ParseBenchRecord(line);
  ASSERT_TRUE(rec.ok()) << rec.error().message();
  auto best = MeasurementFromRecord(*rec);
  ASSERT_TRUE(best.ok());
  EXPECT_DOUBLE_EQ(best->tokens_per_second, 110);
  EXPECT_TRUE(best->rpc);
  EXPECT_FALSE(best->run.op_offload);
  EXPECT_FALSE(best->run.pinned);
  EXPECT_EQ(best->run.n_depth, 4096);
  EXPECT_DOUBLE_EQ(MeasurementFromRecord(*rec, MeasurementStat::kMedian)->tokens_per_second, 100);
  EXPECT_DOUBLE_EQ(MeasurementFromRecord(*rec, MeasurementStat::kMean)->tokens_per_second, 100);
  EXPECT_FALSE(ParseMeasurementStat("worst").ok());
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

TEST(PerfBridge, RoundsOfTheSameTestArePooled) {
  Measurement a;
  a.label = "pp512 t=1";
  a.samples = {100, 120};
  a.tokens_per_second = 120;
  Measurement b = a;
  b.samples = {90, 150};
  Measurement other = a;
  other.label = "tg32 t=1";
  const auto merged = MergeMeasurements({a, other, b});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].samples.size(), 4u);
  EXPECT_DOUBLE_EQ(merged[0].tokens_per_second, 150);
  EXPECT_DOUBLE_EQ(MergeMeasurements({a, b}, MeasurementStat::kMedian)[0].tokens_per_second, 110);
}

}  // namespace
}  // namespace moetune
