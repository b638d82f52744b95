#pragma once
/// The figures of a tuning report, built from an Analysis (tune/analysis.h):
/// - prefill and decode against N on two aligned panels: measured points with
///   95% intervals, the predicted curve (dashed) where one is given, the cliff,
///   rejected and failed placements with their reasons, the pick;
/// - prefill and decode against context depth for every N measured at more
///   than one depth (the long-context collapse);
/// - a thread or micro-batch comparison with intervals.
/// Each figure carries its numbers as a table and as sparklines.

#include <optional>
#include <string>
#include <vector>

#include "report/document.h"
#include "speed/uncertainty.h"
#include "tune/analysis.h"

namespace moetune {

/// A speed the model predicts for one N (speed/), drawn as a dashed curve.
struct PredictedSpeed {
  int n_cpu_moe = 0;
  std::optional<double> prefill_tps;
  std::optional<double> decode_tps;
};

struct NCurveOptions {
  std::string id = "ncurve";
  std::vector<PredictedSpeed> predicted;
  /// The band of the predicted speeds, shown beside them and in the caption.
  std::optional<PredictionUncertainty> uncertainty;
};

/// Prefill (top) and decode (bottom) against N at the shallowest measured
/// depth, or the predicted curve alone when nothing was measured. nullopt
/// when there is neither.
std::optional<Figure> NCurveFigure(const Analysis& analysis, const NCurveOptions& options = {});

/// Prefill and decode against depth for every N with results at two depths or
/// more; the target context (when known) is marked. nullopt without such data.
std::optional<Figure> DepthFigure(const Analysis& analysis, std::optional<int64_t> target_ctx,
                                  const std::string& id = "depth");

/// One comparison (threads or micro-batch) with 95% intervals; the chosen value
/// is highlighted.
Figure ComparisonFigure(const DimensionComparison& comparison, const std::string& id);

/// "637.7" or "" for a missing summary; "630.1-645.3" for its 95% interval.
std::string FormatTps(const std::optional<Summary>& s);
std::string FormatInterval(const std::optional<Summary>& s);

}  // namespace moetune
