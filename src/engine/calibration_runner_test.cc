#include "engine/calibration_runner.h"

#include <gtest/gtest.h>

#include <map>

#include "engine/perf_bridge.h"
#include "speed/speed_test_util.h"

namespace moetune {
namespace {

// Qwen3-30B-A3B's shape: 48 full-attention layers, 4 KV heads of 128: an f16
// cache of 48 x 2 x 512 x 2 bytes = 96 KiB per cell.
constexpr int64_t kMiB = int64_t{1} << 20;

MachineSpec CpuWithLlc(int64_t llc) {
  MachineSpec s = PresetMachine("no-gpu");
  s.cpu.llc_bytes = llc;
  return s;
}

TEST(CalibrationRunnerTest, DeepDepthPutsTheKvCacheBeyondTheLlc) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const SpeedModel sm(m, CpuWithLlc(32 * kMiB));
  // 1.5 x 32 MiB / 96 KiB = 512 cells, rounded up to 1024.
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), sm.machine()), 1024);
  // 1.5 x 1 GiB / 96 KiB = 16384 cells.
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), CpuWithLlc(1024 * kMiB)), 16384);
  // Unknown LLC, or one the cache cannot pass within 32768 cells: no deep run.
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), CpuWithLlc(0)), 0);
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), CpuWithLlc(4096 * kMiB)), 0);
}

TEST(CalibrationRunnerTest, AddsOneDeepDecodeRunOnlyBeyondTheShallowDepth) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  CalibrationRunOptions o;
  // A big model's cache passes a 32 MiB LLC before depth 2048: no extra run.
  const auto plain = CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(32 * kMiB)), o);
  for (const auto& c : plain) EXPECT_LE(c.n_depth, o.depth);
  // With a 1 GiB LLC the deep run is decode only, at 16384, at most 2 repetitions.
  const auto deep = CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(1024 * kMiB)), o);
  ASSERT_EQ(deep.size(), plain.size() + 1);
  const RunConfig& d = deep.back();
  EXPECT_EQ(d.n_depth, 16384);
  EXPECT_EQ(d.n_prompt, 0);
  EXPECT_EQ(d.n_gen, o.n_gen);
  EXPECT_EQ(d.placement.n_gpu_layers, 0);
  EXPECT_LE(d.repetitions, 2);
  // An explicit depth wins; -1 turns the run off.
  o.deep_depth = 8192;
  EXPECT_EQ(CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(0)), o).back().n_depth, 8192);
  o.deep_depth = -1;
  EXPECT_EQ(CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(1024 * kMiB)), o).size(),
            plain.size());
}

// A fake engine for the logic of the runner: each test runs at the speed the
// model predicts with `truth`'s constants, its repetitions scaled by the
// factors scripted for its label and round (steady when none is).
class ScriptedEngine : public Engine {
 public:
  explicit ScriptedEngine(SpeedModel truth) : truth_(std::move(truth)) {}
  std::map<std::pair<std::string, int>, std::vector<double>> factors;  // (label, round)
  std::vector<std::vector<std::string>> calls;                         // labels run per call

  BenchRun Run(const std::vector<RunConfig>& configs, const ProgressCallback&) override {
    BenchRun run;
    calls.emplace_back();
    for (const auto& c : configs) {
      const RunSettings s = RunSettingsFromConfig(c).value();
      const std::string label = MeasurementLabel(s);
      const int round = ++rounds_[label];
      calls.back().push_back(label);
      const double tps = MustPredict(truth_, s).tokens_per_second;
      RunResult r;
      r.config = c;
      auto it = factors.find({label, round});
      for (double f : it == factors.end() ? std::vector<double>{1, 0.995, 1} : it->second)
        r.samples_ts.push_back(tps * f);
      r.other_cpu_cores = 0.05 * static_cast<double>(calls.size());
      run.results.push_back(r);
    }
    return run;
  }

 private:
  SpeedModel truth_;
  std::map<std::string, int> rounds_;
};

TEST(CalibrationRunnerTest, UnstableTestsAreMeasuredAgainAndNamedWhenTheyStayUnstable) {
  const ModelInfo m = SynthModelInfo("qwen3moe", "tiny");
  const MachineSpec spec = PresetMachine("no-gpu,ddr4-3200-2ch,8c16t");
  CalibrationConstants hidden;
  hidden.cpu_matmul_efficiency = 0.3;
  hidden.cpu_bw_efficiency = 0.8;
  ScriptedEngine engine(SpeedModel(m, spec, hidden));
  CalibrationRunOptions o;
  o.deep_depth = -1;
  const SpeedModel start(m, spec);
  const auto configs = CalibrationConfigs("m.gguf", start, o);
  ASSERT_EQ(configs.size(), 8u);  // threads 1 and 8, depth 0 and 2048, pp and tg
  const std::string steadied = MeasurementLabel(RunSettingsFromConfig(configs[0]).value());
  const std::string shaky = MeasurementLabel(RunSettingsFromConfig(configs[3]).value());
  // One test disturbed once, one on both rounds (one slow repetition each time).
  engine.factors[{steadied, 1}] = {1, 0.6, 1};
  engine.factors[{shaky, 1}] = {1, 1, 0.7};
  engine.factors[{shaky, 2}] = {0.8, 1, 1};

  std::vector<std::string> failures;
  auto rec = RunCalibration(engine, configs, start, &failures);
  ASSERT_TRUE(rec.ok()) << rec.error().message();
  EXPECT_TRUE(failures.empty());
  // Only the two unstable tests ran again, once (kUnstableExtraRounds).
  ASSERT_EQ(engine.calls.size(), 2u);
  EXPECT_EQ(engine.calls[1], (std::vector<std::string>{steadied, shaky}));
  ASSERT_EQ(rec->points.size(), 8u);
  for (const auto& p : rec->points) {
    const bool again = p.label == steadied || p.label == shaky;
    EXPECT_EQ(p.rounds, again ? 2 : 1) << p.label;
    EXPECT_EQ(p.unstable, p.label == shaky) << p.label;
    // The best repetition of every round stands for the test: the model's own figure.
    EXPECT_NEAR(p.predicted_tps / p.measured_tps, 1.0, 0.03) << p.label;
  }
  // The held-out check of consistent runs is small; the load is the busiest run's.
  const CalibrationUncertainty& u = rec->uncertainty;
  EXPECT_EQ(u.held_out_folds, 8);
  EXPECT_LT(u.held_out_prefill, 0.03);
  EXPECT_LT(u.held_out_decode, 0.03);
  EXPECT_GT(u.spread_max, kUnstableRepetitionSpread);  // the shaky test's last round
  EXPECT_LT(u.spread_median, kUnstableRepetitionSpread);
  ASSERT_TRUE(u.other_cores_max.has_value());
  EXPECT_NEAR(*u.other_cores_max, 0.10, 1e-9);
}

TEST(CalibrationRunnerTest, SteadyTestsAreMeasuredOnce) {
  const ModelInfo m = SynthModelInfo("qwen3moe", "tiny");
  const MachineSpec spec = PresetMachine("no-gpu,ddr4-3200-2ch,8c16t");
  ScriptedEngine engine{SpeedModel(m, spec)};
  CalibrationRunOptions o;
  o.deep_depth = -1;
  const SpeedModel start(m, spec);
  auto rec = RunCalibration(engine, CalibrationConfigs("m.gguf", start, o), start, nullptr);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(engine.calls.size(), 1u);
  for (const auto& p : rec->points) EXPECT_EQ(p.rounds, 1);
}

}  // namespace
}  // namespace moetune
