#pragma once
/// What speed to expect from a server at a given context depth, so that watch
/// compares what it sees with what is normal *at the same depth* (attention
/// makes every token slower as the context grows; that is not an alarm).
///
/// Three sources, best first:
/// 1. Measured: the prefill and decode curves against depth that `moetune
///    tune` measured (or `moetune analyze` read from llama-bench sweeps) for
///    the configured --n-cpu-moe.
/// 2. Predicted: the speed model's prediction, through a function seam
///    (PredictedBaseline) that the command layer wires.
/// 3. The session itself: the server's own first requests, extrapolated
///    (SessionBaseline, owned by the detector).
///
/// Between measured depths the time per token is interpolated linearly, and
/// beyond the deepest one it is extrapolated with the last slope: attention
/// adds a cost per token that grows linearly with the context.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace moetune {

/// Expected tokens/s at one depth; nullopt where the source does not say.
struct ExpectedSpeed {
  std::optional<double> prefill_tps;
  std::optional<double> decode_tps;
};

class Baseline {
 public:
  virtual ~Baseline() = default;
  /// Expected speed with `depth` tokens already in the context.
  virtual ExpectedSpeed At(double depth) const = 0;
  /// "measured", "predicted" or "session".
  virtual std::string Kind() const = 0;
  /// One line a person reads: where the expectation comes from.
  virtual std::string Describe() const = 0;
};

/// Seconds per token against depth: linear between points, the last slope
/// (never negative) beyond them, the first value before them.
class PerTokenCurve {
 public:
  /// Points (depth, tokens/s); non-positive speeds are ignored.
  void Add(double depth, double tokens_per_second);
  bool empty() const { return points_.empty(); }
  std::optional<double> TokensPerSecond(double depth) const;
  std::vector<double> Depths() const;

 private:
  std::vector<std::pair<double, double>> points_;  // (depth, seconds per token), sorted
};

/// One measured depth.
struct BaselinePoint {
  int64_t depth = 0;
  std::optional<double> prefill_tps;
  std::optional<double> decode_tps;
};

/// Measured curves.
class CurveBaseline : public Baseline {
 public:
  CurveBaseline(const std::vector<BaselinePoint>& points, std::string description);
  ExpectedSpeed At(double depth) const override;
  std::string Kind() const override { return "measured"; }
  std::string Describe() const override { return description_; }
  int n_cpu_moe = -1;  // the N the curves were measured at

 private:
  PerTokenCurve prefill_, decode_;
  std::string description_;
};

/// The points of an analysis (`moetune analyze --json`, or the "analysis"
/// object of tune's JSON: `curves[].depth` and `curves[].points[]` with
/// `n_cpu_moe`, `prefill_tps.mean`, `decode_tps.mean`) at `n_cpu_moe`; when
/// that N was not measured, the nearest measured N at or above it (a more
/// conservative placement, so no faster than the real one), else the nearest
/// below, and `notes` says so. `n_cpu_moe` nullopt: the analysis's
/// recommendation. Errors when the analysis has no usable point.
Result<std::unique_ptr<CurveBaseline>> BaselineFromAnalysis(const nlohmann::json& analysis,
                                                            std::optional<int> n_cpu_moe,
                                                            const std::string& source,
                                                            std::vector<std::string>* notes);

/// The speed model's prediction for the server's placement, as a function of
/// depth. This is the seam for src/perf: the command layer builds the
/// function from the model, the placement and the machine profile.
using SpeedPrediction = std::function<ExpectedSpeed(double depth)>;

class PredictedBaseline : public Baseline {
 public:
  PredictedBaseline(SpeedPrediction predict, std::string description)
      : predict_(std::move(predict)), description_(std::move(description)) {}
  ExpectedSpeed At(double depth) const override { return predict_(depth); }
  std::string Kind() const override { return "predicted"; }
  std::string Describe() const override { return description_; }

 private:
  SpeedPrediction predict_;
  std::string description_;
};

/// The session's own first requests: seconds per token fitted as a + b*depth
/// (least squares weighted by tokens, b >= 0; b = 0 when the requests span too
/// little depth to tell), once `kReferenceCount` prefill and decode
/// observations are in. Learning stops then, so a later slowdown cannot
/// become the new normal.
class SessionBaseline : public Baseline {
 public:
  static constexpr int kReferenceCount = 5;

  /// Offers one observation (tokens, seconds, mid depth) to the reference set;
  /// ignored once that side is complete.
  void OfferPrefill(double tokens, double seconds, double depth);
  void OfferDecode(double tokens, double seconds, double depth);
  bool prefill_ready() const { return prefill_.size() >= kReferenceCount; }
  bool decode_ready() const { return decode_.size() >= kReferenceCount; }

  ExpectedSpeed At(double depth) const override;
  std::string Kind() const override { return "session"; }
  std::string Describe() const override;

 private:
  struct Obs {
    double tokens, seconds, depth;
  };
  static std::optional<double> Fit(const std::vector<Obs>& obs, double depth);
  std::vector<Obs> prefill_, decode_;
};

}  // namespace moetune
