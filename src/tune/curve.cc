#include "tune/curve.h"

#include <algorithm>
#include <cmath>

namespace moetune {

const char* CurveShapeName(CurveShape shape) {
  switch (shape) {
    case CurveShape::kFlat:
      return "flat";
    case CurveShape::kMonotonic:
      return "monotonic";
    case CurveShape::kPeak:
      return "peak";
    case CurveShape::kCliff:
      return "cliff";
  }
  return "unknown";
}

namespace {

// The series the curve's shape is read on: the objective (the workload's time
// to answer, when known), else prefill when measured, else decode.
std::optional<Estimate> Series(const CurvePoint& p, bool use_prefill) {
  if (p.failed()) return std::nullopt;
  if (p.objective) return p.objective;
  const auto& s = use_prefill ? p.prefill : p.decode;
  if (!s) return std::nullopt;
  return FromSummary(*s);
}

// The series cliffs are read on: prefill when measured (the VRAM cliff shows
// there first), else decode.
std::optional<Estimate> SpeedSeries(const CurvePoint& p, bool use_prefill) {
  if (p.failed()) return std::nullopt;
  const auto& s = use_prefill ? p.prefill : p.decode;
  if (!s) return std::nullopt;
  return FromSummary(*s);
}

bool AnyPrefill(const std::vector<CurvePoint>& points) {
  return std::any_of(points.begin(), points.end(),
                     [](const CurvePoint& p) { return !p.failed() && p.prefill.has_value(); });
}

}  // namespace

std::vector<Cliff> FindCliffs(const std::vector<CurvePoint>& points, const CurveRules& rules) {
  std::vector<Cliff> cliffs;
  const bool prefill = AnyPrefill(points);
  // Walk from the most conservative N (last) toward N = 0, over measured points.
  std::optional<size_t> prev;
  std::optional<Estimate> best_so_far;  // the best point on the CPU side of `prev`
  for (size_t i = points.size(); i-- > 0;) {
    const auto cur = SpeedSeries(points[i], prefill);
    if (!cur) continue;
    if (prev) {
      const Estimate before = *SpeedSeries(points[*prev], prefill);
      const double ratio = before.mean > 0 ? cur->mean / before.mean : 1.0;
      // A drop far below the ordinary slope, and one the noise cannot explain
      // (with no spread known, a drop to under half is taken on its own).
      const int cmp = CompareEstimates(*cur, before, rules);
      const bool no_spread = !cur->sd || !before.sd;
      // The VRAM boundary is where speed was at its best: a drop from a point
      // already far below the best is the steady fall of a curve that overflows
      // everywhere, not a cliff.
      const bool from_the_top = before.mean >= rules.cliff_top_fraction * best_so_far->mean ||
                                CompareEstimates(before, *best_so_far, rules) >= 0;
      if (ratio < rules.cliff_ratio && from_the_top &&
          (cmp < 0 || (no_spread && ratio < rules.cliff_ratio * rules.no_spread_cliff_factor))) {
        cliffs.push_back({points[*prev].n_cpu_moe, points[i].n_cpu_moe, ratio});
      }
    }
    if (!best_so_far || cur->mean > best_so_far->mean) best_so_far = *cur;
    prev = i;
  }
  return cliffs;
}

CurveShape ClassifyCurve(const std::vector<CurvePoint>& points, const std::vector<Cliff>& cliffs,
                         const CurveRules& rules) {
  if (!cliffs.empty()) return CurveShape::kCliff;
  const bool prefill = AnyPrefill(points);
  std::vector<std::pair<int, Estimate>> v;  // ascending N
  for (const auto& p : points) {
    if (auto e = Series(p, prefill)) v.push_back({p.n_cpu_moe, *e});
  }
  if (v.size() < 2) return CurveShape::kFlat;
  size_t best = 0, worst = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i].second.mean > v[best].second.mean) best = i;
    if (v[i].second.mean < v[worst].second.mean) worst = i;
  }
  const double spread = (v[best].second.mean - v[worst].second.mean) / v[best].second.mean;
  if (spread < rules.flat_fraction || CompareEstimates(v[best].second, v[worst].second, rules) == 0)
    return CurveShape::kFlat;
  // The best point, taking ties into account: if the all-CPU end is tied with
  // the best and the GPU end is clearly worse, speed only falls toward the GPU.
  const Estimate& cpu_end = v.back().second;
  const Estimate& gpu_end = v.front().second;
  if (CompareEstimates(cpu_end, v[best].second, rules) >= 0 &&
      CompareEstimates(gpu_end, cpu_end, rules) < 0) {
    // Monotonic means no interior point beats the all-CPU end.
    return CurveShape::kMonotonic;
  }
  return CurveShape::kPeak;
}

}  // namespace moetune
