#include "engine/sim_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "speed/presets.h"
#include "speed/speed_test_util.h"

namespace moetune {
namespace {

// A full-scale Qwen3-30B-A3B shape as a sparse file (header only).
const std::string& ModelPath() {
  static const std::string path = [] {
    // One folder per process, the same file name in each: the simulated noise
    // is seeded from the file name, so every run of this test sees the same samples.
    const std::string dir = ::testing::TempDir() + "sim_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    return WriteSparsePreset("qwen3moe", dir + "/qwen3moe.gguf");
  }();
  return path;
}

SimEngineOptions Options(const char* machine, uint64_t seed, SpillMode spill = SpillMode::kStrict) {
  SimEngineOptions o;
  o.machine = DefaultMachineSpec();
  EXPECT_TRUE(ApplyMachinePresets(machine, &o.machine).ok());
  o.machine.spill = spill;
  o.seed = seed;
  return o;
}

std::vector<RunConfig> Configs(std::initializer_list<int> ncmoe, int reps = 5) {
  std::vector<RunConfig> out;
  for (int n : ncmoe) {
    for (bool pp : {true, false}) {
      RunConfig c;
      c.model = ModelPath();
      c.placement.n_cpu_moe = n;
      c.threads = 8;
      (pp ? c.n_prompt : c.n_gen) = pp ? 512 : 128;
      c.repetitions = reps;
      out.push_back(c);
    }
  }
  return out;
}

TEST(SimEngine, SameSeedSameSamplesWhateverTheOrder) {
  SimEngine a(Options("rtx4090-24g,ddr5-6000-2ch,8c16t", 7));
  SimEngine b(Options("rtx4090-24g,ddr5-6000-2ch,8c16t", 7));
  SimEngine c(Options("rtx4090-24g,ddr5-6000-2ch,8c16t", 8));
  auto configs = Configs({20, 30});
  const BenchRun ra = a.Run(configs);
  std::vector<RunConfig> reversed(configs.rbegin(), configs.rend());
  const BenchRun rb = b.Run(reversed);
  const BenchRun rc = c.Run(configs);
  ASSERT_EQ(ra.results.size(), 4u);
  for (size_t i = 0; i < configs.size(); ++i) {
    ASSERT_TRUE(ra.results[i].ok());
    EXPECT_EQ(ra.results[i].samples_ns, rb.results[configs.size() - 1 - i].samples_ns);
    EXPECT_NE(ra.results[i].samples_ns, rc.results[i].samples_ns);
    EXPECT_EQ(ra.results[i].samples_ts.size(), 5u);
  }
}

TEST(SimEngine, ARepeatedMeasurementDrawsFreshNoise) {
  // Measuring the same configuration again must not return the same samples
  // (tune pools repetitions until intervals separate); a new engine with the
  // same seed replays the whole sequence.
  const auto configs = Configs({30});
  SimEngine a(Options("rtx4070-12g,ddr4-3200-2ch,6p8e", 3));
  const BenchRun first = a.Run(configs);
  const BenchRun second = a.Run(configs);
  SimEngine b(Options("rtx4070-12g,ddr4-3200-2ch,6p8e", 3));
  const BenchRun replay_first = b.Run(configs);
  const BenchRun replay_second = b.Run(configs);
  for (size_t i = 0; i < configs.size(); ++i) {
    ASSERT_TRUE(first.results[i].ok() && second.results[i].ok());
    EXPECT_NE(first.results[i].samples_ns, second.results[i].samples_ns);
    EXPECT_EQ(first.results[i].samples_ns, replay_first.results[i].samples_ns);
    EXPECT_EQ(second.results[i].samples_ns, replay_second.results[i].samples_ns);
  }
}

TEST(SimEngine, ASharedPlanCacheChangesNoResult) {
  SimEngineOptions shared = Options("rtx4070-12g,ddr5-6000-2ch,8c16t", 5, SpillMode::kSilent);
  shared.plans = std::make_shared<SimPlanCache>();
  SimEngine a(shared), b(shared);  // the second engine plans nothing
  SimEngine alone(Options("rtx4070-12g,ddr5-6000-2ch,8c16t", 5, SpillMode::kSilent));
  const auto configs = Configs({0, 20, 40});
  const BenchRun ra = a.Run(configs), rb = b.Run(configs), rc = alone.Run(configs);
  for (size_t i = 0; i < configs.size(); ++i) {
    ASSERT_TRUE(ra.results[i].ok());
    EXPECT_EQ(ra.results[i].samples_ns, rb.results[i].samples_ns);
    EXPECT_EQ(ra.results[i].samples_ns, rc.results[i].samples_ns);
    EXPECT_EQ(ra.results[i].record.at("spill_bytes"), rc.results[i].record.at("spill_bytes"));
  }
}

TEST(SimEngine, ResultsAreMarkedSimulatedAndGroupedLikeLlamaBench) {
  SimEngine e(Options("rtx4070-12g,ddr4-3200-2ch,6p8e", 1));
  const BenchRun r = e.Run(Configs({30, 40}));
  EXPECT_EQ(r.invocations.size(), 2u);  // one "process" per placement
  EXPECT_EQ(r.TotalModelLoads(), 2);
  EXPECT_EQ(r.backends.rfind("SIM", 0), 0u);
  for (const auto& res : r.results) {
    ASSERT_TRUE(res.ok());
    EXPECT_TRUE(res.record.at("simulated").get<bool>());
    EXPECT_NE(res.record.at("backends").get<std::string>().find("RTX 4070"), std::string::npos);
    EXPECT_GT(res.avg_ts, 0);
    // A simulated speed is a prediction: it carries the default constants' band.
    EXPECT_FALSE(res.record.at("calibrated").get<bool>());
    const auto& range = res.record.at("predicted_tps_range");
    const double predicted = res.record.at("predicted_tps").get<double>();
    EXPECT_LE(range[0].get<double>(), predicted);
    EXPECT_GT(range[1].get<double>(), predicted);
  }
  // Fewer experts on the CPU is faster here (everything fits).
  EXPECT_GT(r.results[1].avg_ts, r.results[3].avg_ts);
  EXPECT_EQ(e.Info().origin, "simulated");
}

TEST(SimEngine, StrictModeFailsLikeADeviceOutOfMemory) {
  SimEngine e(Options("rtx4070-12g", 1));
  const BenchRun r = e.Run(Configs({0, 40}));
  ASSERT_FALSE(r.results[0].ok());
  EXPECT_EQ(r.results[0].failure->kind, FailureKind::kOutOfMemoryDevice);
  EXPECT_NE(r.results[0].failure->message.find("cudaMalloc failed: out of memory"),
            std::string::npos);
  EXPECT_TRUE(r.results[2].ok());
  EXPECT_EQ(r.FailureCount(), 2u);
}

TEST(SimEngine, SilentSpillRunsButSlowsPrefillDown) {
  SimEngine strict(Options("rtx4070-12g,ddr5-6000-2ch,8c16t", 3));
  SimEngine silent(Options("rtx4070-12g,ddr5-6000-2ch,8c16t", 3, SpillMode::kSilent));
  const BenchRun a = silent.Run(Configs({0, 40}));
  ASSERT_TRUE(a.results[0].ok());
  EXPECT_GT(a.results[0].record.at("spill_bytes").get<int64_t>(), 0);
  EXPECT_LT(a.results[0].avg_ts, a.results[2].avg_ts);  // spilled prefill < healthy prefill
  EXPECT_FALSE(strict.Run(Configs({0})).results[0].ok());
}

TEST(SimEngine, RepetitionsSpreadAndSometimesStandOut) {
  SimEngineOptions o = Options("no-gpu,16c32t,ddr5-6000-2ch", 11);
  o.outlier_probability = 0.1;
  SimEngine e(o);
  const BenchRun r = e.Run(Configs({0}, 200));
  ASSERT_TRUE(r.results[1].ok());
  const auto& s = r.results[1].samples_ts;
  const double best = *std::max_element(s.begin(), s.end());
  int slow = 0;
  for (double v : s) slow += v < best / 1.25 ? 1 : 0;
  EXPECT_GT(slow, 5);   // outliers exist
  EXPECT_LT(slow, 60);  // but most repetitions do not stand out
  EXPECT_GT(r.results[1].stddev_ts, 0);
}

TEST(SimEngine, MissingModelIsALoadFailure) {
  SimEngine e(Options("rtx4090-24g", 1));
  RunConfig c;
  c.model = "/nonexistent/model.gguf";
  c.n_gen = 16;
  const BenchRun r = e.Run({c});
  ASSERT_FALSE(r.results[0].ok());
  EXPECT_EQ(r.results[0].failure->kind, FailureKind::kModelLoad);
  EXPECT_EQ(r.TotalModelLoads(), 0);
}

// A time limit (a tune's budget left) ends the simulated process where it
// reaches the limit, as the real engine's would be: the results from there on
// are failures marked as ended by the limit, and the time stops at it.
TEST(SimEngine, ATimeLimitEndsTheRunThatReachesIt) {
  SimEngine free_run(Options("rtx4070-12g,ddr4-3200-2ch,6p8e", 1));
  const BenchRun whole = free_run.Run(Configs({30, 40}));
  ASSERT_EQ(whole.invocations.size(), 2u);
  const double first = whole.invocations[0].wall_seconds;
  EXPECT_FALSE(whole.invocations[0].time_limit_reached);

  SimEngine e(Options("rtx4070-12g,ddr4-3200-2ch,6p8e", 1));
  e.set_time_limit(first + 1e-3);  // the second placement's load reaches it
  const BenchRun r = e.Run(Configs({30, 40}));
  ASSERT_EQ(r.invocations.size(), 2u);
  EXPECT_FALSE(r.invocations[0].time_limit_reached);
  EXPECT_TRUE(r.results[0].ok() && r.results[1].ok());
  EXPECT_TRUE(r.invocations[1].time_limit_reached);
  EXPECT_TRUE(r.invocations[1].timed_out);
  for (std::size_t i : {2u, 3u}) {
    ASSERT_FALSE(r.results[i].ok());
    EXPECT_EQ(r.results[i].failure->kind, FailureKind::kTimeout);
  }
  EXPECT_NEAR(r.invocations[0].wall_seconds + r.invocations[1].wall_seconds, *e.time_limit(), 1e-6);
}

}  // namespace
}  // namespace moetune
