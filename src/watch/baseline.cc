#include "watch/baseline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "stats/summary.h"

namespace moetune {
namespace {

// A speed a baseline can use: finite, positive, at most a billion tokens/s.
std::optional<double> Mean(const std::optional<Summary>& s) {
  if (!s || !std::isfinite(s->mean) || s->mean <= 0 || s->mean > 1e9) return std::nullopt;
  return s->mean;
}

}  // namespace

void PerTokenCurve::Add(double depth, double tokens_per_second) {
  if (!(tokens_per_second > 0) || !std::isfinite(tokens_per_second) || !std::isfinite(depth))
    return;
  points_.emplace_back(std::max(0.0, depth), 1.0 / tokens_per_second);
  std::sort(points_.begin(), points_.end());
}

std::vector<double> PerTokenCurve::Depths() const {
  std::vector<double> d;
  for (const auto& p : points_) d.push_back(p.first);
  return d;
}

std::optional<double> PerTokenCurve::TokensPerSecond(double depth) const {
  if (points_.empty()) return std::nullopt;
  if (points_.size() == 1 || depth <= points_.front().first) return 1.0 / points_.front().second;
  for (std::size_t i = 1; i < points_.size(); ++i) {
    const auto& [d0, t0] = points_[i - 1];
    const auto& [d1, t1] = points_[i];
    if (depth <= d1 || i + 1 == points_.size()) {
      const double slope = d1 > d0 ? (t1 - t0) / (d1 - d0) : 0.0;
      // Beyond the deepest point: extrapolate, but never toward faster.
      const double s = depth > d1 ? std::max(0.0, slope) : slope;
      const double t = depth > d1 ? t1 + s * (depth - d1) : t0 + slope * (depth - d0);
      if (!(t > 0)) return std::nullopt;
      return 1.0 / t;
    }
  }
  return std::nullopt;
}

CurveBaseline::CurveBaseline(const std::vector<BaselinePoint>& points, std::string description)
    : description_(std::move(description)) {
  for (const auto& p : points) {
    if (p.prefill_tps) prefill_.Add(static_cast<double>(p.depth), *p.prefill_tps);
    if (p.decode_tps) decode_.Add(static_cast<double>(p.depth), *p.decode_tps);
  }
}

ExpectedSpeed CurveBaseline::At(double depth) const {
  return {prefill_.TokensPerSecond(depth), decode_.TokensPerSecond(depth)};
}

Result<std::unique_ptr<CurveBaseline>> BaselineFromAnalysis(const Analysis& analysis,
                                                            std::optional<int> n_cpu_moe,
                                                            const std::string& source,
                                                            std::vector<std::string>* notes) {
  // Measured N values, each with its points by depth.
  std::map<int, std::vector<BaselinePoint>> by_n;
  for (const auto& c : analysis.curves) {
    if (c.depth < 0) continue;
    for (const auto& p : c.points) {
      if (p.n_cpu_moe < 0) continue;
      BaselinePoint bp{c.depth, Mean(p.prefill), Mean(p.decode)};
      if (bp.prefill_tps || bp.decode_tps) by_n[p.n_cpu_moe].push_back(bp);
    }
  }
  if (by_n.empty()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{} has no measured point (curves[].points[] with n_cpu_moe and "
                             "prefill_tps/decode_tps)",
                             source));
  }
  if (!n_cpu_moe) n_cpu_moe = analysis.recommendation.n_cpu_moe;
  int chosen = by_n.begin()->first;
  if (n_cpu_moe) {
    auto at_or_above = by_n.lower_bound(*n_cpu_moe);
    if (at_or_above != by_n.end()) {
      chosen = at_or_above->first;
    } else {
      chosen = by_n.rbegin()->first;
    }
    if (chosen != *n_cpu_moe && notes != nullptr) {
      notes->push_back(fmt::format(
          "{} has no measurement at --n-cpu-moe {}; the baseline uses N={}, the nearest measured "
          "{} placement",
          source, *n_cpu_moe, chosen, chosen > *n_cpu_moe ? "more conservative" : "less"));
    }
  } else if (notes != nullptr) {
    notes->push_back(fmt::format(
        "the server's --n-cpu-moe is unknown and {} has no recommendation; the baseline uses "
        "N={}",
        source, chosen));
  }
  const auto& pts = by_n[chosen];
  std::vector<int64_t> depths;
  for (const auto& p : pts) depths.push_back(p.depth);
  std::sort(depths.begin(), depths.end());
  depths.erase(std::unique(depths.begin(), depths.end()), depths.end());
  auto b = std::make_unique<CurveBaseline>(
      pts, fmt::format("measured in {} at --n-cpu-moe {} (depths {})", source, chosen,
                       fmt::join(depths, ", ")));
  b->n_cpu_moe = chosen;
  return b;
}

PredictedBaseline::PredictedBaseline(const std::vector<BaselinePoint>& points,
                                     std::string description, double tolerance)
    : description_(std::move(description)), tolerance_(std::max(1.0, tolerance)) {
  for (const auto& p : points) {
    if (p.prefill_tps) prefill_.Add(static_cast<double>(p.depth), *p.prefill_tps);
    if (p.decode_tps) decode_.Add(static_cast<double>(p.depth), *p.decode_tps);
  }
}

ExpectedSpeed PredictedBaseline::Predicted(double depth) const {
  return {prefill_.TokensPerSecond(depth), decode_.TokensPerSecond(depth)};
}

ExpectedSpeed PredictedBaseline::At(double depth) const {
  ExpectedSpeed e = Predicted(depth);
  if (e.prefill_tps) *e.prefill_tps /= tolerance_;
  if (e.decode_tps) *e.decode_tps /= tolerance_;
  return e;
}

void SessionBaseline::OfferPrefill(double tokens, double seconds, double depth) {
  if (prefill_ready() || !(tokens > 0) || !(seconds > 0)) return;
  prefill_.push_back({tokens, seconds, std::max(0.0, depth)});
}

void SessionBaseline::OfferDecode(double tokens, double seconds, double depth) {
  if (decode_ready() || !(tokens > 0) || !(seconds > 0)) return;
  decode_.push_back({tokens, seconds, std::max(0.0, depth)});
}

namespace {

// Keeps the first `keep` and the latest others, at most `max` in all.
template <typename T>
void PushBounded(std::vector<T>* v, T x, std::size_t keep, std::size_t max) {
  v->push_back(x);
  if (v->size() > max) v->erase(v->begin() + static_cast<std::ptrdiff_t>(keep));
}

}  // namespace

void SessionBaseline::ExtendPrefill(double tokens, double seconds, double depth) {
  if (!prefill_ready() || !(tokens > 0) || !(seconds > 0)) return;
  PushBounded(&prefill_, Obs{tokens, seconds, std::max(0.0, depth)}, kReferenceCount, kMaxPoints);
}

void SessionBaseline::ExtendDecode(double tokens, double seconds, double depth) {
  if (!decode_ready() || !(tokens > 0) || !(seconds > 0)) return;
  PushBounded(&decode_, Obs{tokens, seconds, std::max(0.0, depth)}, kReferenceCount, kMaxPoints);
}

std::optional<double> SessionBaseline::Fit(const std::vector<Obs>& obs, double depth) {
  if (static_cast<int>(obs.size()) < kReferenceCount) return std::nullopt;
  double w = 0, wt = 0;
  double dmin = std::numeric_limits<double>::max(), dmax = 0;
  for (const auto& o : obs) {
    w += o.tokens;
    wt += o.seconds;  // tokens * (seconds / tokens)
    dmin = std::min(dmin, o.depth);
    dmax = std::max(dmax, o.depth);
  }
  // Too little spread in depth to see a slope: hold the mean (conservative
  // for prefill, since the decode check also sees attention growth).
  double slope = 0, intercept = wt / w;
  if (dmax - dmin >= 256) {
    // Theil-Sen: the median of the pairwise slopes and of the intercepts they
    // leave. One disturbed request among the five (interference only ever
    // slows a request down) moves a least-squares slope a lot, and watch
    // extrapolates it several times beyond the span; the medians hold.
    std::vector<double> slopes;
    for (std::size_t i = 0; i < obs.size(); ++i) {
      for (std::size_t j = i + 1; j < obs.size(); ++j) {
        const double dd = obs[j].depth - obs[i].depth;
        if (std::abs(dd) < 64) continue;
        slopes.push_back((obs[j].seconds / obs[j].tokens - obs[i].seconds / obs[i].tokens) / dd);
      }
    }
    if (!slopes.empty()) slope = std::max(0.0, Median(slopes));
    std::vector<double> intercepts;
    intercepts.reserve(obs.size());
    for (const auto& o : obs) intercepts.push_back(o.seconds / o.tokens - slope * o.depth);
    intercept = Median(intercepts);
    if (!(intercept > 0)) {
      slope = 0;
      intercept = wt / w;
    }
  }
  const double t = intercept + slope * std::max(0.0, depth);
  return t > 0 ? std::optional<double>(1.0 / t) : std::nullopt;
}

ExpectedSpeed SessionBaseline::At(double depth) const {
  return {Fit(prefill_, depth), Fit(decode_, depth)};
}

std::string SessionBaseline::Describe() const {
  if (!prefill_ready() || !decode_ready()) {
    return fmt::format(
        "the session's own first requests ({} of {} prefill, {} of {} decode "
        "samples so far)",
        prefill_.size(), kReferenceCount, decode_.size(), kReferenceCount);
  }
  if (prefill_.size() > static_cast<std::size_t>(kReferenceCount)) {
    return fmt::format(
        "the session's own requests (its first {} and {} judged healthy since), fitted against "
        "depth",
        kReferenceCount, prefill_.size() - kReferenceCount);
  }
  return fmt::format("the session's own first {} requests, extrapolated with depth",
                     kReferenceCount);
}

}  // namespace moetune
