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
  std::vector<double> samples;   // tokens/s of every repetition, of every round
  std::string label;             // "pp256 t=2 ub=256 d=2048"
  bool rpc = false;              // measured with the RPC device
  std::string model_file;        // the record's model file name ("" = unknown)
  int rounds = 1;                // rounds measured (an unstable test is measured again)
  std::size_t last_round = 0;    // samples[last_round..] are the last round's
};

// The rules of a calibration's own check (docs/speed-model.md, "How far a
// calibration reproduces"), each named once.

/// A test is unstable when the relative spread of the repetitions of a round
/// (RepetitionSpread) is beyond this. On a quiet machine three repetitions
/// spread by 1-2% (tune/rules.h, CurveRules::undecided_width); one repetition
/// slowed by a fifth by another process gives about 10%.
inline constexpr double kUnstableRepetitionSpread = 0.05;
/// Rounds an unstable test is measured again before the fit.
inline constexpr int kUnstableExtraRounds = 1;
/// The weight in the fit of a test still unstable after its extra rounds (the
/// others weigh 1): its figure counts, but cannot pull the constants alone.
inline constexpr double kUnstableWeight = 0.25;
/// Folds of the held-out check: leave-one-out up to this many tests, then
/// k-fold (a sweep of hundreds of tests read with --measurements stays quick).
inline constexpr int kHeldOutFolds = 10;
/// Fewer tests than this get no held-out check (a fit of one test is nothing).
inline constexpr int kHeldOutMinTests = 3;

/// The relative spread of repetitions: their coefficient of variation
/// (stats Summary::cv); 0 for fewer than two.
double RepetitionSpread(const std::vector<double>& samples);
/// The spread of the last round of `m`.
double LastRoundSpread(const Measurement& m);
/// The last round of `m` spread beyond kUnstableRepetitionSpread.
bool IsUnstable(const Measurement& m);
/// Its weight in the fit: kUnstableWeight when unstable, else 1.
double FitWeight(const Measurement& m);

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

/// The held-out check: the tests split into min(kHeldOutFolds, n) folds (test
/// i in fold i mod k); each fold predicted by the constants FitConstants fits
/// to the other folds from `start`. Points of every test beside its held-out
/// prediction; `folds` 0 (and no points) for fewer than kHeldOutMinTests.
struct HeldOutCheck {
  int folds = 0;
  std::vector<CalibrationPoint> points;
};
HeldOutCheck HeldOutPredictions(const SpeedModel& model, const std::vector<Measurement>& ms,
                                const CalibrationConstants& start);

/// A calibration's own uncertainty: the held-out check's median errors and
/// the spread of the tests' repetitions (the machine's load is the runner's).
CalibrationUncertainty SelfCheck(const SpeedModel& model, const std::vector<Measurement>& ms,
                                 const CalibrationConstants& start);

}  // namespace moetune
