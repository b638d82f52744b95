#pragma once
/// The default constants' reference: published llama.cpp runs with routed
/// experts in host memory (bench/speed/public_points.json), each on its own
/// what-if machine, the fit of the constants to all of them (the calibration
/// fit's minimiser, speed/calibration_fit.h) and the leave-one-out check that
/// gives uncalibrated predictions their band (speed/uncertainty.h,
/// docs/speed-model.md "Uncalibrated predictions").

#include <memory>
#include <string>
#include <vector>

#include "model/model_info.h"
#include "model/synth_tensors.h"
#include "speed/calibration.h"
#include "speed/speed_model.h"
#include "speed/uncertainty.h"
#include "util/result.h"

namespace moetune {

/// One published measurement.
struct PublicPoint {
  std::string id;
  std::string source;  // the address it was published at
  std::string reported;
  std::string tool;  // "llama-bench" or "llama-server"
  std::vector<std::string> assumed;
  std::string model_preset;  // a synth preset of the same architecture
  SynthQuant quant = SynthQuant::kQ4_K_M;
  MachineSpec machine;
  RunSettings run;
  bool prefill = false;
  double tokens_per_second = 0;
  /// True when routed experts of some layer live in host memory.
  bool expert_offload = false;
};

/// Reads the points file; errors name the point and the field.
Result<std::vector<PublicPoint>> LoadPublicPoints(const std::string& path);

/// The points with the models and speed models to predict them: full-scale
/// synth shapes written as sparse files into `dir` (a few MB each).
class PublicSet {
 public:
  static Result<PublicSet> Prepare(std::vector<PublicPoint> points, const std::string& dir);

  const std::vector<PublicPoint>& points() const { return points_; }
  /// The prediction of point `i` with `constants` (0 when it does not load).
  double Predict(size_t i, const CalibrationConstants& constants) const;
  /// Sum of squared log errors over the points whose `use[i]` is true.
  double Loss(const CalibrationConstants& constants, const std::vector<bool>& use) const;

 private:
  std::vector<PublicPoint> points_;
  std::vector<std::shared_ptr<ModelInfo>> models_;  // per point (shared between points)
  std::vector<std::shared_ptr<SpeedModel>> speed_;  // per point
};

/// The constants the public fit moves: those that decide decode with experts in
/// host memory (the RAM and matrix-vector rate, the GPU's bandwidth, the
/// hand-overs). Prefill's stay with the prefill anchors (docs/speed-model.md).
const std::vector<std::string>& PublicFitConstants();

/// Fits `PublicFitConstants()` to the points `use` selects, starting from `start`.
CalibrationConstants FitPublic(const PublicSet& set, const CalibrationConstants& start,
                               const std::vector<bool>& use, int sweeps = 6);

/// One point predicted by the constants fitted to all the others.
struct LeaveOneOutRow {
  std::string id;
  bool prefill = false;
  double measured = 0;
  double fitted = 0;    // predicted by the fit to every point
  double left_out = 0;  // predicted by the fit without this point
  double ratio() const { return left_out > 0 ? measured / left_out : 0; }  // measured / predicted
};

struct PublicFitResult {
  CalibrationConstants constants;  // fitted to every point
  std::vector<LeaveOneOutRow> rows;
  PredictionUncertainty band;  // from the leave-one-out ratios
};

/// The fit to every point and the leave-one-out check (one fit per point).
PublicFitResult FitAndLeaveOneOut(const PublicSet& set, const CalibrationConstants& start,
                                  int sweeps = 6);

/// The central `coverage` share of measured/predicted ratios (linear
/// interpolation between order statistics), widened to hold 1 (the prediction).
SpeedBand BandOfRatios(std::vector<double> ratios, double coverage);

}  // namespace moetune
