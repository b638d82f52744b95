#pragma once
/// Fitting the free constants of the speed model to measurements: which
/// constants a set of measurements can pin, and a bounded least-squares fit of
/// log(predicted / measured) with a weak prior toward the defaults (so that a
/// constant the runs cannot see stays at its documented default).

#include <string>
#include <vector>

#include "speed/calibration.h"
#include "speed/speed_model.h"

namespace moetune {

/// One real measurement of a test.
struct Measurement {
  RunSettings run;
  double tokens_per_second = 0;  // the chosen figure of the repetitions (best by default)
  std::vector<double> samples;   // tokens/s of every repetition
  std::string label;             // "pp256 t=2 ub=256 d=2048"
  bool rpc = false;              // measured with the RPC device
  std::string model_file;        // the record's model file name ("" = unknown)
};

/// Which constants the measurements can pin: CPU efficiencies from CPU tests,
/// thread efficiencies only when the thread count varies, attention only with
/// depth > 0, GPU/link/RPC constants only when layers ran on the accelerator.
/// When every measurement ran on the accelerator, only its constants are
/// fitted: the CPU's come from a CPU calibration.
/// When every measurement ran on the accelerator, only its constants are
/// fitted: the CPU's come from a CPU calibration.
std::vector<std::string> IdentifiableConstants(const std::vector<Measurement>& ms,
                                               const MachineSpec& machine);

struct FitResult {
  CalibrationConstants constants;
  std::vector<std::string> fitted;
  std::vector<CalibrationPoint> points;
  double median_error_default = 0;  // median |pred/meas - 1| with `start`
  double median_error = 0;          // with the fitted constants
};

/// Fits `names` (IdentifiableConstants when empty) starting from `start`.
/// Measurements whose configuration fails to load in the model are skipped.
FitResult FitConstants(const SpeedModel& model, const std::vector<Measurement>& ms,
                       const CalibrationConstants& start, std::vector<std::string> names = {});

/// Predictions of `model` (with its constants) beside each measurement, no fitting.
std::vector<CalibrationPoint> ComparePredictions(const SpeedModel& model,
                                                 const std::vector<Measurement>& ms);

/// Median of |predicted/measured - 1| over the points of one kind (prefill or decode).
double MedianAbsError(const std::vector<CalibrationPoint>& points, bool prefill);

}  // namespace moetune
