#pragma once
/// Fitting the free constants of the speed model to measurements: which
/// constants a set of measurements can pin, and a bounded least-squares fit of
/// log(predicted / measured) with a weak prior toward the defaults (so that a
/// constant the runs cannot see stays at its documented default).

#include <functional>
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

/// Minimises `loss` (a sum of squared log errors) over the constants `names`,
/// each inside its physically plausible range, plus a weak prior toward `start`
/// (a constant the loss cannot see stays put): coordinate descent with a
/// golden-section search per constant, `sweeps` times over the list.
CalibrationConstants MinimizeConstants(
    const std::vector<std::string>& names, const CalibrationConstants& start,
    const std::function<double(const CalibrationConstants&)>& loss, int sweeps = 6);

/// The squared log error of `m`'s prediction for `run` against `measured`
/// (a large fixed error when the configuration does not load in the model).
double LogErrorLoss(const SpeedModel& m, const RunSettings& run, double measured);

/// Predictions of `model` (with its constants) beside each measurement, no fitting.
std::vector<CalibrationPoint> ComparePredictions(const SpeedModel& model,
                                                 const std::vector<Measurement>& ms);

/// Median of |predicted/measured - 1| over the points of one kind (prefill or decode).
double MedianAbsError(const std::vector<CalibrationPoint>& points, bool prefill);

}  // namespace moetune
