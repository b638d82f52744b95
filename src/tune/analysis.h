#pragma once
/// The reading rules of the method (docs/method.md), applied to measurements
/// from any source: the curve of speed against N at each depth (shape, cliffs),
/// prefill collapsing with depth, thread and micro-batch comparisons with
/// confidence intervals, and a recommendation under the safety rule. `moetune
/// analyze` prints this; `moetune tune` uses it on its own measurements.
///
/// Analyze runs the steps in order, each a function of its own:
///   1. SliceResults (tune/slice.h): one model, the settings held fixed along
///      the N curve, tests grouped by depth and N;
///   2. BuildCurves (tune/slice.h): the curve at each depth, cliffs and shape;
///   3. FindRejections (tune/rejections.h): failures, the cliff, collapse with
///      depth, as typed verdicts;
///   4. Recommend (tune/recommend.h): the N under the safety rule;
///   5. CompareDimension (tune/dimensions.h): threads and micro-batch.
/// The rules and thresholds they share are in tune/rules.h.

#include <string>
#include <vector>

#include "engine/run_config.h"
#include "tune/curve.h"
#include "tune/dimensions.h"
#include "tune/recommend.h"
#include "tune/rejections.h"
#include "tune/rules.h"

namespace moetune {

struct Analysis {
  std::string model;                     // the model analysed (file name as recorded)
  std::string settings;                  // the settings held fixed along the N curve
  std::vector<CurveAtDepth> curves;      // ascending depth; curves[0] is the shallowest
  CurveShape shape = CurveShape::kFlat;  // of the shallowest curve
  std::vector<Cliff> cliffs;             // of the shallowest curve
  std::vector<Rejection> rejected;       // ascending N
  std::vector<DepthCheck> depth_checks;
  std::vector<DimensionComparison> comparisons;
  Recommendation recommendation;
  std::vector<std::string> notes;
  bool has_prefill = false, has_decode = false;

  /// The rejection of placement `n`, or nullptr.
  const Rejection* RejectionOf(int n) const;
};

/// Applies the rules. Never fails: with too little data the notes say what to measure.
Analysis Analyze(const std::vector<RunResult>& results, const AnalysisOptions& options);

}  // namespace moetune
