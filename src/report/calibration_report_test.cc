#include "report/calibration_report.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

CalibrationPoint Point(const std::string& label, double spread, int rounds, bool unstable) {
  CalibrationPoint p;
  p.label = label;
  p.measured_tps = 100;
  p.predicted_tps = 104;
  p.spread = spread;
  p.rounds = rounds;
  p.unstable = unstable;
  return p;
}

TEST(CalibrationReport, TextStatesTheCalibrationsOwnUncertainty) {
  CalibrationRecord r;
  r.points = {Point("pp256 t=1", 0.01, 1, false), Point("tg16 t=2", 0.02, 2, false),
              Point("tg16 t=1 d=2048", 0.09, 2, true)};
  r.uncertainty.held_out_folds = 3;
  r.uncertainty.held_out_prefill = 0.062;
  r.uncertainty.held_out_decode = 0.118;
  r.uncertainty.spread_median = 0.02;
  r.uncertainty.spread_max = 0.09;
  r.uncertainty.other_cores_max = 1.4;
  const std::string t = CalibrationText(r);
  EXPECT_NE(t.find("held-out check (3 folds"), std::string::npos) << t;
  EXPECT_NE(t.find("prefill 6.2%, decode 11.8%"), std::string::npos) << t;
  EXPECT_NE(t.find("measured again, steady then: tg16 t=2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("still unstable, weight 0.25 in the fit: tg16 t=1 d=2048\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("9.0% (2 rounds) unstable"), std::string::npos) << t;
  EXPECT_NE(t.find("up to 1.40 cores during a run (a busy machine"), std::string::npos) << t;

  // No check, nothing unstable, a quiet machine: said so, no warning.
  r.uncertainty = CalibrationUncertainty{};
  r.uncertainty.other_cores_max = 0.1;
  r.points = {Point("pp256 t=1", 0.01, 1, false)};
  const std::string q = CalibrationSelfCheckText(r);
  EXPECT_NE(q.find("held-out check: not made (fewer than 3 tests)"), std::string::npos) << q;
  EXPECT_EQ(q.find("still unstable"), std::string::npos) << q;
  EXPECT_EQ(q.find("measured again,"), std::string::npos) << q;
  EXPECT_EQ(q.find("busy"), std::string::npos) << q;
}

}  // namespace
}  // namespace moetune
