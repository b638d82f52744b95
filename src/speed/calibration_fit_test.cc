#include "speed/calibration_fit.h"

#include <gtest/gtest.h>

#include <cmath>

#include "speed/speed_test_util.h"

namespace moetune {
namespace {

// Measurements produced by the model itself with known constants.
std::vector<Measurement> Synthetic(const SpeedModel& truth, const std::vector<int>& threads) {
  std::vector<Measurement> ms;
  for (int t : threads) {
    for (int depth : {0, 2048}) {
      for (bool pp : {true, false}) {
        Measurement m;
        m.run = pp ? Prefill(0, depth, t, 256) : Decode(0, depth, t);
        if (pp) m.run.n_prompt = 256;
        m.tokens_per_second = MustPredict(truth, m.run).tokens_per_second;
        m.label = pp ? "pp" : "tg";
        ms.push_back(m);
      }
    }
  }
  return ms;
}

TEST(CalibrationFit, RecoversTheConstantsThatMadeTheMeasurements) {
  const ModelInfo m = SynthModelInfo("qwen3moe", "tiny");
  const MachineSpec spec = PresetMachine("no-gpu,ddr4-3200-2ch,8c16t");
  CalibrationConstants hidden;
  hidden.cpu_matmul_efficiency = 0.31;
  hidden.cpu_attn_prefill_efficiency = 0.12;
  hidden.cpu_attn_decode_efficiency = 0.02;
  hidden.cpu_bw_efficiency = 0.9;
  hidden.thread_efficiency_prefill = 0.6;
  const SpeedModel truth(m, spec, hidden);
  const auto ms = Synthetic(truth, {1, 8});
  const auto names = IdentifiableConstants(ms, spec);
  EXPECT_NE(std::find(names.begin(), names.end(), "thread_efficiency_prefill"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "gpu_bw_efficiency"), names.end());

  const FitResult fit = FitConstants(SpeedModel(m, spec), ms, CalibrationConstants{});
  EXPECT_GT(fit.median_error_default, 0.05);
  EXPECT_LT(fit.median_error, 0.02);
  EXPECT_NEAR(fit.constants.cpu_matmul_efficiency, 0.31, 0.31 * 0.1);
  EXPECT_NEAR(fit.constants.cpu_attn_prefill_efficiency, 0.12, 0.12 * 0.15);
  EXPECT_NEAR(fit.constants.thread_efficiency_prefill, 0.6, 0.1);
  ASSERT_EQ(fit.points.size(), ms.size());
  for (const auto& p : fit.points) EXPECT_NEAR(p.predicted_tps / p.measured_tps, 1.0, 0.05);
  // A constant no run can see stays at its default.
  EXPECT_DOUBLE_EQ(fit.constants.gpu_compute_efficiency,
                   CalibrationConstants{}.gpu_compute_efficiency);
}

TEST(CalibrationFit, OneThreadCountLeavesThreadScalingAlone) {
  const ModelInfo m = SynthModelInfo("qwen3moe", "tiny");
  const MachineSpec spec = PresetMachine("no-gpu,ddr4-3200-2ch,8c16t");
  const auto ms = Synthetic(SpeedModel(m, spec), {8});
  const auto names = IdentifiableConstants(ms, spec);
  EXPECT_EQ(std::find(names.begin(), names.end(), "thread_efficiency_decode"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu_attn_decode_efficiency"), names.end());
}

TEST(CalibrationFit, RpcRunsPinTheLinkAndTheRoundTrip) {
  // The RPC device does not offload host weights (docs/memory.md): what crosses
  // the socket is the hidden state at every device switch (two per layer whose
  // experts stay on the host) and the logits of each output. Placements with
  // many switches make the link's rate visible beside the round trips.
  const ModelInfo m = SynthModelInfo("qwen3moe", "small");
  MachineSpec spec = PresetMachine("rpc-cpu");
  CalibrationConstants hidden;
  hidden.rpc_link_gbps = 0.7;
  hidden.rpc_handover_us = 900;
  const SpeedModel truth(m, spec, hidden);
  std::vector<Measurement> ms;
  for (int n : {0, 4, 8, 16, 24, 32}) {
    for (bool pp : {true, false}) {
      Measurement x;
      x.run = pp ? Prefill(n, 0, 1, 512) : Decode(n, 0, 1);
      x.rpc = true;
      x.tokens_per_second = MustPredict(truth, x.run).tokens_per_second;
      ms.push_back(x);
    }
  }
  const FitResult fit = FitConstants(SpeedModel(m, spec), ms, CalibrationConstants{});
  EXPECT_NEAR(fit.constants.rpc_handover_us, 900, 90);
  EXPECT_NEAR(fit.constants.rpc_link_gbps, 0.7, 0.14);
  EXPECT_LT(fit.median_error, 0.02);
}

TEST(CalibrationFit, MedianAbsErrorPerKind) {
  std::vector<CalibrationPoint> pts(3);
  pts[0].prefill = true, pts[0].measured_tps = 100, pts[0].predicted_tps = 110;
  pts[1].prefill = true, pts[1].measured_tps = 100, pts[1].predicted_tps = 70;
  pts[2].prefill = false, pts[2].measured_tps = 10, pts[2].predicted_tps = 9;
  EXPECT_NEAR(MedianAbsError(pts, true), 0.2, 1e-12);
  EXPECT_NEAR(MedianAbsError(pts, false), 0.1, 1e-12);
}

TEST(CalibrationFit, RepetitionSpreadJudgesTheLastRound) {
  EXPECT_DOUBLE_EQ(RepetitionSpread({100, 100, 100}), 0);
  EXPECT_DOUBLE_EQ(RepetitionSpread({100}), 0);  // one repetition: no spread to judge
  Measurement m;
  m.samples = {100, 70, 100};  // one repetition slowed by 30%: cv 19%
  EXPECT_NEAR(RepetitionSpread(m.samples), 0.192, 0.001);
  EXPECT_TRUE(IsUnstable(m));
  EXPECT_DOUBLE_EQ(FitWeight(m), kUnstableWeight);
  // A second, steady round decides: the test is stable and weighs fully.
  m.last_round = m.samples.size();
  m.samples.insert(m.samples.end(), {99, 100, 101});
  m.rounds = 2;
  EXPECT_NEAR(LastRoundSpread(m), 0.01, 0.001);
  EXPECT_FALSE(IsUnstable(m));
  EXPECT_DOUBLE_EQ(FitWeight(m), 1.0);
  // Just beyond the threshold is unstable, just inside is not.
  const double s = kUnstableRepetitionSpread;
  m.last_round = 0;
  m.samples = {100 * (1 - 1.01 * s), 100 * (1 + 1.01 * s)};  // cv = 1.01 s * sqrt(2)
  EXPECT_TRUE(IsUnstable(m));
  m.samples = {100 * (1 - 0.7 * s), 100 * (1 + 0.7 * s)};  // cv = 0.99 s
  EXPECT_FALSE(IsUnstable(m));
}

// A test measured 1.6 times faster than the machine: the in-sample fit bends
// toward it, the held-out check (constants fitted without it) does not.
TEST(CalibrationFit, HeldOutCheckSeesWhatTheInSampleErrorHides) {
  const ModelInfo m = SynthModelInfo("qwen3moe", "tiny");
  const MachineSpec spec = PresetMachine("no-gpu,ddr4-3200-2ch,8c16t");
  CalibrationConstants hidden;
  hidden.cpu_matmul_efficiency = 0.31;
  hidden.cpu_bw_efficiency = 0.9;
  const SpeedModel truth(m, spec, hidden);
  auto ms = Synthetic(truth, {1, 8});
  ASSERT_EQ(ms.size(), 8u);
  const SpeedModel start(m, spec);

  const HeldOutCheck clean = HeldOutPredictions(start, ms, CalibrationConstants{});
  EXPECT_EQ(clean.folds, 8);  // leave-one-out
  ASSERT_EQ(clean.points.size(), ms.size());
  EXPECT_LT(MedianAbsError(clean.points, true), 0.03);
  EXPECT_LT(MedianAbsError(clean.points, false), 0.03);

  const std::size_t bad = 3;  // decode, one thread, depth 2048
  ASSERT_FALSE(ms[bad].run.n_prompt > 0 && ms[bad].run.n_gen == 0);
  ms[bad].tokens_per_second *= 1.6;
  const FitResult fit = FitConstants(start, ms, CalibrationConstants{});
  const double in_sample = fit.points[bad].predicted_tps / fit.points[bad].measured_tps - 1;
  const HeldOutCheck held = HeldOutPredictions(start, ms, CalibrationConstants{});
  const double out = held.points[bad].predicted_tps / held.points[bad].measured_tps - 1;
  EXPECT_LT(std::fabs(out), 1.0);
  EXPECT_GT(std::fabs(out), 0.3);  // about 1/1.6 - 1 = -37.5%
  EXPECT_LT(std::fabs(in_sample), std::fabs(out) - 0.05);
  const CalibrationUncertainty u = SelfCheck(start, ms, CalibrationConstants{});
  EXPECT_EQ(u.held_out_folds, 8);
  EXPECT_GT(u.held_out_decode, MedianAbsError(clean.points, false));

  // Too few tests: no check. Many tests: k-fold, every test predicted once.
  EXPECT_EQ(HeldOutPredictions(start, {ms[0], ms[1]}, CalibrationConstants{}).folds, 0);
  auto many = Synthetic(truth, {1, 2, 8});
  ASSERT_EQ(many.size(), 12u);
  const HeldOutCheck k = HeldOutPredictions(start, many, CalibrationConstants{});
  EXPECT_EQ(k.folds, kHeldOutFolds);
  for (const auto& p : k.points) EXPECT_GT(p.predicted_tps, 0);
}

// An unstable test weighs kUnstableWeight: a wrong figure pulls the fit less.
// The same test twice, once right and once 1.5 times too fast: equal weights
// meet in the middle (sqrt(1.5) = +22%), a quarter weight at 1.5^(1/5) = +8.4%.
TEST(CalibrationFit, UnstableTestsWeighLessInTheFit) {
  const ModelInfo m = SynthModelInfo("qwen3moe", "tiny");
  const MachineSpec spec = PresetMachine("no-gpu,ddr4-3200-2ch,8c16t");
  const SpeedModel truth(m, spec);
  auto ms = Synthetic(truth, {8});
  Measurement wrong = ms[1];  // decode, depth 0
  const double right = wrong.tokens_per_second;
  wrong.tokens_per_second *= 1.5;
  wrong.samples = {wrong.tokens_per_second, wrong.tokens_per_second};
  ms.push_back(wrong);
  const std::size_t bad = ms.size() - 1;
  const auto pull = [&] {
    const FitResult fit = FitConstants(SpeedModel(m, spec), ms, CalibrationConstants{});
    return fit.points[bad].predicted_tps / right - 1;
  };
  const double stable_pull = pull();
  EXPECT_NEAR(stable_pull, std::sqrt(1.5) - 1, 0.04);
  ms[bad].samples = {ms[bad].tokens_per_second, ms[bad].tokens_per_second * 0.7};
  ASSERT_TRUE(IsUnstable(ms[bad]));
  EXPECT_NEAR(pull(), std::pow(1.5, 0.2) - 1, 0.03);
  const auto pts = ComparePredictions(truth, ms);
  EXPECT_TRUE(pts[bad].unstable);
  EXPECT_GT(pts[bad].spread, kUnstableRepetitionSpread);
  EXPECT_FALSE(pts[0].unstable);
}

}  // namespace
}  // namespace moetune
