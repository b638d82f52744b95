#include "engine/perf_bridge.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(PerfBridge, RunConfigBecomesRunSettings) {
  RunConfig c;
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 12;
  c.n_ubatch = 1024;
  c.type_k = ggml_type::kQ8_0;
  c.flash_attn = FlashAttn::kOff;
  c.load_mode = LoadMode::kNone;
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
  c.type_v = 99;  // no ggml type this build knows
  EXPECT_FALSE(RunSettingsFromConfig(c).ok());
}

TEST(PerfBridge, ExpertsKeptFromTheLastLayersTravelOnlyInTheOverrideRules) {
  // N is the family's count; the engine is given the -ot rule alone, so the
  // speed model must not keep the first N layers' experts on the CPU as well.
  RunConfig c;
  c.placement.n_cpu_moe = 3;
  c.placement.n_layer = 8;
  c.placement.cpu_experts = CpuExpertsFrom::kLast;
  auto r = RunSettingsFromConfig(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->n_cpu_moe, 0);
  EXPECT_NE(r->override_tensor.find("5|6|7"), std::string::npos) << r->override_tensor;
  c.placement.cpu_experts = CpuExpertsFrom::kFirst;
  EXPECT_EQ(RunSettingsFromConfig(c)->n_cpu_moe, 3);
  EXPECT_EQ(RunSettingsFromConfig(c)->override_tensor, "");
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

TEST(PerfBridge, BestIgnoresALoneSampleFarAboveTheOthers) {
  EXPECT_DOUBLE_EQ(SampleStat({9.4, 1094.5, 680.6, 674.6, 663.4, 613.9}, MeasurementStat::kBest),
                   680.6);
  // Two lone ones in a row are both dropped; a top sample within 50% counts
  // (interference spreads honest repetitions widely on a busy machine).
  EXPECT_DOUBLE_EQ(SampleStat({100, 101, 99, 160, 250}, MeasurementStat::kBest), 101);
  EXPECT_DOUBLE_EQ(SampleStat({1.5, 6.4, 7.4, 10.2}, MeasurementStat::kBest), 10.2);
  // Two samples: the faster one (interference only slows a run down).
  EXPECT_DOUBLE_EQ(SampleStat({426.7, 709.8}, MeasurementStat::kBest), 709.8);
  EXPECT_DOUBLE_EQ(SampleStat({5}, MeasurementStat::kBest), 5);
  EXPECT_DOUBLE_EQ(SampleStat({}, MeasurementStat::kBest), 0);
}

}  // namespace
}  // namespace moetune
