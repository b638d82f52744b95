#include "speed/uncertainty.h"

#include <fmt/format.h>

#include <algorithm>

namespace moetune {
namespace {

// The leave-one-out result of bench/speed/public_fit over
// bench/speed/public_points.json (docs/speed-model.md, "Uncalibrated
// predictions"): the 10th and 90th percentiles of measured / predicted when each
// published run is predicted by constants fitted to the others. The test
// PublicFit.DefaultsAndStoredBandsAreTheFitsResult recomputes them.
constexpr SpeedBand kUncalibratedPrefill{1.0, 4.25};
constexpr SpeedBand kUncalibratedDecode{0.876, 1.187};
constexpr int kPublicPoints = 15;

}  // namespace

PredictionUncertainty UncalibratedUncertainty() {
  PredictionUncertainty u;
  u.calibrated = false;
  u.prefill = kUncalibratedPrefill;
  u.decode = kUncalibratedDecode;
  u.coverage = 0.8;
  u.points = kPublicPoints;
  u.basis = fmt::format(
      "default constants fitted to {} published llama.cpp runs on other machines; leave-one-out, "
      "8 in 10 measured within the band",
      kPublicPoints);
  return u;
}

PredictionUncertainty CalibratedUncertainty(const CalibrationRecord& record) {
  PredictionUncertainty u;
  u.calibrated = true;
  auto band = [](double median_error) {
    const double e = std::max(kCalibratedBandFloor, 2.0 * median_error);
    return SpeedBand{1.0 / (1.0 + e), 1.0 + e};
  };
  u.coverage = 0.8;
  u.points = static_cast<int>(record.points.size());
  const std::string where = record.hostname.empty() ? "this machine" : record.hostname;
  const CalibrationUncertainty& self = record.uncertainty;
  if (self.held_out_folds > 0) {
    // Tests the constants were not fitted to: the error a prediction of
    // another configuration or model can expect.
    u.prefill = band(self.held_out_prefill);
    u.decode = band(self.held_out_decode);
    u.basis = fmt::format(
        "calibrated on {} ({}): held-out median error prefill {:.1f}%, decode {:.1f}% over {} "
        "runs",
        where, record.created_at, self.held_out_prefill * 100, self.held_out_decode * 100,
        record.points.size());
    return u;
  }
  u.prefill = u.decode = band(record.median_error);
  u.basis = fmt::format("calibrated on {} ({}): median error {:.1f}% over {} runs", where,
                        record.created_at, record.median_error * 100, record.points.size());
  return u;
}

std::string HowToCalibrate() {
  return "run `moetune calibrate MODEL` on this machine, or `moetune calibrate MODEL "
         "--measurements FILE` with a sweep measured here (`moetune bench --json`, "
         "llama-bench -o jsonl)";
}

}  // namespace moetune
