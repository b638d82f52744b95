#include "speed/uncertainty.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

CalibrationRecord Record() {
  CalibrationRecord r;
  r.hostname = "box";
  r.median_error = 0.03;  // the fitted tests
  r.points.resize(9);
  return r;
}

TEST(CalibratedUncertainty, TheHeldOutErrorOfEachKindSetsItsBand) {
  CalibrationRecord r = Record();
  r.uncertainty.held_out_folds = 9;
  r.uncertainty.held_out_prefill = 0.15;
  r.uncertainty.held_out_decode = 0.02;
  const PredictionUncertainty u = CalibratedUncertainty(r);
  EXPECT_TRUE(u.calibrated);
  // Twice the held-out median error each way; decode's floor is +-10%.
  EXPECT_NEAR(u.prefill.high, 1.30, 1e-12);
  EXPECT_NEAR(u.prefill.low, 1 / 1.30, 1e-12);
  EXPECT_NEAR(u.decode.high, 1 + kCalibratedBandFloor, 1e-12);
  EXPECT_NE(u.basis.find("held-out"), std::string::npos) << u.basis;
  EXPECT_NE(u.basis.find("15.0%"), std::string::npos) << u.basis;
}

TEST(CalibratedUncertainty, ARecordWithoutTheCheckKeepsTheFittedError) {
  CalibrationRecord r = Record();
  r.median_error = 0.08;
  const PredictionUncertainty u = CalibratedUncertainty(r);
  EXPECT_NEAR(u.prefill.high, 1.16, 1e-12);
  EXPECT_NEAR(u.decode.high, 1.16, 1e-12);
  EXPECT_EQ(u.basis.find("held-out"), std::string::npos) << u.basis;
}

}  // namespace
}  // namespace moetune
