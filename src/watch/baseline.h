#pragma once
/// What speed to expect from a server at a given context depth, so that watch
/// compares what it sees with what is normal *at the same depth* (attention
/// makes every token slower as the context grows; that is not an alarm).
///
/// Three sources, best first:
/// 1. Measured: the prefill and decode curves against depth that `moetune
///    tune` measured (or `moetune analyze` read from llama-bench sweeps) for
///    the configured --n-cpu-moe.
/// 2. Predicted: the speed model's prediction for the server's configuration
///    (PredictedBaseline; watch/prediction.h builds it), provisional: the
///    session's own requests replace it once there are enough of them.
/// 3. The session itself: the server's own first requests, extrapolated
///    (SessionBaseline, owned by the detector).
///
/// Between measured depths the time per token is interpolated linearly, and
/// beyond the deepest one it is extrapolated with the last slope: attention
/// adds a cost per token that grows linearly with the context.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tune/analysis.h"
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
  /// True for an estimate that the session's own measured requests replace
  /// once there are enough of them (a prediction); false for measured curves.
  virtual bool provisional() const { return false; }
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

/// The points of an analysis (`moetune analyze --json`, or the analysis of a
/// tune, read by tune/tune_reader.h: each curve's depth, each point's N and
/// mean prefill and decode speeds) at `n_cpu_moe`; when
/// that N was not measured, the nearest measured N at or above it (a more
/// conservative placement, so no faster than the real one), else the nearest
/// below, and `notes` says so. `n_cpu_moe` nullopt: the analysis's
/// recommendation. Errors when the analysis has no usable point.
Result<std::unique_ptr<CurveBaseline>> BaselineFromAnalysis(const Analysis& analysis,
                                                            std::optional<int> n_cpu_moe,
                                                            const std::string& source,
                                                            std::vector<std::string>* notes);

/// How far a prediction is trusted: the speed model reproduces published
/// figures within a factor of 1.5 (docs/speed-model.md, sanity anchors), so
/// watch expects at least prediction / 1.5.
inline constexpr double kPredictionTolerance = 1.5;

/// The speed model's prediction for the server's configuration: curves against
/// depth like the measured ones, but only an estimate. Two consequences:
/// - the expectation is the prediction's lower edge (divided by `tolerance`),
///   so a model that is somewhat too optimistic does not make a healthy server
///   look like an overflow;
/// - it is provisional: once the session has its own reference (its first
///   requests that the prediction did not judge as overflow), the session's
///   measured speeds judge instead (OverflowDetector).
class PredictedBaseline : public Baseline {
 public:
  /// Points (depth, predicted prefill and decode tokens/s).
  PredictedBaseline(const std::vector<BaselinePoint>& points, std::string description,
                    double tolerance = kPredictionTolerance);
  ExpectedSpeed At(double depth) const override;
  std::string Kind() const override { return "predicted"; }
  std::string Describe() const override { return description_; }
  bool provisional() const override { return true; }
  double tolerance() const { return tolerance_; }
  /// The prediction itself at `depth` (not divided by the tolerance).
  ExpectedSpeed Predicted(double depth) const;
  bool empty() const { return prefill_.empty() && decode_.empty(); }

 private:
  PerTokenCurve prefill_, decode_;
  std::string description_;
  double tolerance_;
};

/// The session's own requests: seconds per token fitted as a + b*depth
/// (Theil-Sen: medians of the pairwise slopes and of the intercepts, b >= 0,
/// so that one disturbed request does not tilt the line; b = 0 and the
/// token-weighted mean when the requests span too little depth to tell), once
/// the first `kReferenceCount` prefill and decode observations are in. After
/// that only requests the detector judged healthy join (ExtendPrefill/
/// ExtendDecode), so a slowdown never becomes the new normal, while the
/// curve follows the conversation instead of being extrapolated far beyond
/// its first requests.
class SessionBaseline : public Baseline {
 public:
  static constexpr int kReferenceCount = 5;

  /// The most observations per side (the first kReferenceCount and the latest
  /// ones that joined since).
  static constexpr int kMaxPoints = 24;

  /// Offers one observation (tokens, seconds, mid depth) to the reference set;
  /// ignored once that side is complete.
  void OfferPrefill(double tokens, double seconds, double depth);
  void OfferDecode(double tokens, double seconds, double depth);
  /// Adds an observation judged healthy to a complete reference (ignored
  /// before): the first kReferenceCount stay, the latest others are kept.
  void ExtendPrefill(double tokens, double seconds, double depth);
  void ExtendDecode(double tokens, double seconds, double depth);
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
