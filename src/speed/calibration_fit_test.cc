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
  // Big enough that copying the experts over the socket shows in prefill.
  const ModelInfo m = SynthModelInfo("qwen3moe", "small");
  MachineSpec spec = PresetMachine("rpc-cpu");
  CalibrationConstants hidden;
  hidden.rpc_link_gbps = 0.7;
  hidden.rpc_handover_us = 900;
  const SpeedModel truth(m, spec, hidden);
  std::vector<Measurement> ms;
  for (int n : {0, 4, 8}) {
    for (bool pp : {true, false}) {
      Measurement x;
      x.run = pp ? Prefill(n, 0, 1, 256) : Decode(n, 0, 1);
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

}  // namespace
}  // namespace moetune
