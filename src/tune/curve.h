#pragma once
/// Reading the curve of tokens/s against N (`--n-cpu-moe`), the way the method
/// (docs/method.md) reads it by eye: where does prefill fall off a cliff, what
/// shape does the curve have, which point is best once noise is taken into
/// account. Pure functions of summaries; no engine.

#include <optional>
#include <string>
#include <vector>

#include "stats/summary.h"
#include "tune/rules.h"

namespace moetune {

enum class CurveShape {
  kFlat,       // no point differs from another beyond the noise (e.g. no GPU)
  kMonotonic,  // speed falls as experts move to the GPU: every split overflows
  kPeak,       // rises to a best point (possibly at N = 0: everything fits)
  kCliff,      // prefill drops far beyond the noise between two neighbours
};
const char* CurveShapeName(CurveShape shape);

struct CurvePoint {
  int n_cpu_moe = 0;
  std::optional<Summary> prefill;     // tokens/s
  std::optional<Summary> decode;      // tokens/s
  std::optional<Estimate> objective;  // what "best" means (requests/s or a speed)
  std::string failure;                // non-empty: the placement failed (the engine's words)
  bool failed() const { return !failure.empty(); }
};

struct Cliff {
  int n_cpu_moe_safe = 0;       // the last point before the drop (more experts on the CPU)
  int n_cpu_moe_collapsed = 0;  // the first point after it
  double prefill_ratio = 0;     // prefill(collapsed) / prefill(safe)
};

/// Cliffs in prefill (decode when there is no prefill), walking from the most
/// conservative N toward the GPU. Points must be sorted by ascending N.
std::vector<Cliff> FindCliffs(const std::vector<CurvePoint>& points, const CurveRules& rules);

/// The shape of a curve (points sorted by ascending N; failed points ignored),
/// read on each point's objective when it has one (the workload's time to
/// answer), else on prefill, else decode.
CurveShape ClassifyCurve(const std::vector<CurvePoint>& points, const std::vector<Cliff>& cliffs,
                         const CurveRules& rules);

/// The curve over N at one depth, with the settings held fixed.
struct CurveAtDepth {
  int depth = 0;
  std::vector<CurvePoint> points;  // ascending N
  CurveShape shape = CurveShape::kFlat;
  std::vector<Cliff> cliffs;
};

}  // namespace moetune
