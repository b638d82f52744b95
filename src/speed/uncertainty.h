#pragma once
/// How far a prediction may be from what the machine will measure, as data:
/// every prediction carries one (SpeedPrediction::uncertainty) and report/
/// renders it. Before `moetune calibrate` the constants are the defaults fitted
/// to published runs on other machines (bench/speed/public_points.json), and the
/// band is what leaving each of those runs out of the fit gave for it
/// (docs/speed-model.md, "Uncalibrated predictions"); after a calibration it is
/// the calibration's own error.

#include <string>

#include "speed/calibration.h"

namespace moetune {

/// Measured tokens/s fall between `low` and `high` times the prediction (for
/// the share of runs `coverage` says).
struct SpeedBand {
  double low = 1;
  double high = 1;
};

struct PredictionUncertainty {
  bool calibrated = false;
  SpeedBand prefill;
  SpeedBand decode;
  double coverage = 0.8;  // share of the reference runs inside the bands
  int points = 0;         // reference runs the bands come from
  std::string basis;      // one line: where the bands come from
};

/// The band of the default constants: leave-one-out over the published runs.
PredictionUncertainty UncalibratedUncertainty();

/// The narrowest calibrated band, each way: runs on the same machine still vary.
inline constexpr double kCalibratedBandFloor = 0.10;

/// The band after `moetune calibrate`: twice the calibration's median error each
/// way (about 8 in 10 of normally spread errors), never narrower than
/// kCalibratedBandFloor: per kind the held-out median error of its own check
/// (CalibrationUncertainty), the error of the fitted tests for a record
/// without one.
PredictionUncertainty CalibratedUncertainty(const CalibrationRecord& record);

/// What to run to narrow an uncalibrated band: `moetune calibrate MODEL`, or
/// `moetune calibrate MODEL --measurements FILE` with a sweep measured on the
/// machine (`moetune bench --json`, llama-bench -o jsonl).
std::string HowToCalibrate();

}  // namespace moetune
