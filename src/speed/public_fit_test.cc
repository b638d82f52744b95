// The published runs the default constants are fitted to, the fit and the
// leave-one-out bands (bench/speed/public_points.json, docs/speed-model.md
// "Uncalibrated predictions").
#include "speed/public_fit.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

using testing::TempDir;

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string PointsFile() {
  return std::string(MOETUNE_SOURCE_DIR) + "/bench/speed/public_points.json";
}

std::vector<PublicPoint> Points() {
  auto p = LoadPublicPoints(PointsFile());
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
  return p.ok() ? *p : std::vector<PublicPoint>{};
}

TEST(PublicFit, AtLeastFifteenCitedExpertOffloadRunsOnDifferentMachines) {
  const auto points = Points();
  int offload = 0;
  std::set<std::string> gpus, cpus, rams, sources, ids;
  for (const auto& p : points) {
    EXPECT_EQ(p.source.rfind("https://", 0), 0u) << p.id << ": " << p.source;
    EXPECT_FALSE(p.reported.empty()) << p.id;
    EXPECT_TRUE(ids.insert(p.id).second) << "duplicate id " << p.id;
    EXPECT_GT(p.tokens_per_second, 0) << p.id;
    offload += p.expert_offload ? 1 : 0;
    ASSERT_TRUE(p.machine.has_gpu()) << p.id;
    gpus.insert(p.machine.accel()->name);
    cpus.insert(p.machine.cpu.name + std::to_string(p.machine.cpu.p_cores));
    rams.insert(std::to_string(static_cast<int>(p.machine.ram.read_gbps)));
    sources.insert(p.source);
  }
  EXPECT_GE(offload, 15);
  EXPECT_GE(gpus.size(), 5u);
  EXPECT_GE(cpus.size(), 3u);
  EXPECT_GE(rams.size(), 3u);
  EXPECT_GE(sources.size(), 5u);
}

TEST(PublicFit, BadPointsFileNamesThePointAndTheField) {
  TempDir tmp;
  const std::string path = tmp.File("p.json");
  WriteFile(path,
            R"({"points":[{"id":"x","source":"https://a","reported":"r",)"
            R"("tool":"llama-bench","tokens_per_second":10,)"
            R"("model":{"preset":"qwen3moe","quant":"q4_k_m"},)"
            R"("machine":{"gpu":"rtx4090-24g"},"run":{"threads":8,"test":"zz","tokens":128}}]})");
  auto r = LoadPublicPoints(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("points[0].run"), std::string::npos) << r.error().message();
  WriteFile(path, "{\"points\": 3}");
  EXPECT_FALSE(LoadPublicPoints(path).ok());
  WriteFile(path, "not json");
  EXPECT_FALSE(LoadPublicPoints(path).ok());
}

// The defaults in speed/calibration.h are the fit's result and the bands in
// speed/uncertainty.cc are its leave-one-out result: rerunning bench/speed/
// public_fit on the data gives them back. The decode constants trade off
// against each other along a flat valley (the loss moves by 0.2% between the
// defaults and 30 more sweeps), so "the fit's result" is checked on the loss:
// no refit is more than 1% better than the defaults.
TEST(PublicFit, DefaultsAndStoredBandsAreTheFitsResult) {
  TempDir tmp;
  auto set = PublicSet::Prepare(Points(), tmp.path());
  ASSERT_TRUE(set.ok()) << set.error().message();
  const CalibrationConstants defaults;
  const std::vector<bool> all(set->points().size(), true);
  const PublicFitResult r = FitAndLeaveOneOut(*set, defaults);
  EXPECT_LE(set->Loss(defaults, all), 1.01 * set->Loss(r.constants, all));
  const PredictionUncertainty stored = UncalibratedUncertainty();
  EXPECT_EQ(stored.points, static_cast<int>(set->points().size()));
  EXPECT_NEAR(r.band.prefill.low, stored.prefill.low, 0.05 * stored.prefill.low);
  EXPECT_NEAR(r.band.prefill.high, stored.prefill.high, 0.05 * stored.prefill.high);
  EXPECT_NEAR(r.band.decode.low, stored.decode.low, 0.05 * stored.decode.low);
  EXPECT_NEAR(r.band.decode.high, stored.decode.high, 0.05 * stored.decode.high);
  // The band is honest about the defaults themselves: most published runs lie
  // inside it (in-sample, so at least the leave-one-out share).
  int inside = 0;
  for (size_t i = 0; i < set->points().size(); ++i) {
    const auto& p = set->points()[i];
    const SpeedBand& b = p.prefill ? stored.prefill : stored.decode;
    const double ratio = p.tokens_per_second / set->Predict(i, defaults);
    inside += ratio >= b.low && ratio <= b.high ? 1 : 0;
  }
  EXPECT_GE(inside, static_cast<int>(0.75 * static_cast<double>(set->points().size())));
}

TEST(PublicFit, BandOfRatiosIsTheCentralShare) {
  std::vector<double> r;
  for (int i = 1; i <= 11; ++i) r.push_back(0.5 + 0.1 * (i - 1));  // 0.5 .. 1.5
  const SpeedBand b = BandOfRatios(r, 0.8);
  EXPECT_NEAR(b.low, 0.6, 1e-9);
  EXPECT_NEAR(b.high, 1.4, 1e-9);
  // Failed predictions (ratio 0) do not count.
  r.push_back(0);
  EXPECT_NEAR(BandOfRatios(r, 0.8).low, 0.6, 1e-9);
  // The band holds the prediction itself.
  const SpeedBand above = BandOfRatios({2.0, 2.5, 3.0, 3.5}, 0.8);
  EXPECT_DOUBLE_EQ(above.low, 1.0);
  EXPECT_GT(above.high, 3.0);
}

}  // namespace
}  // namespace moetune
