#pragma once
/// The first two steps of reading measurements (tune/analysis.h): slicing the
/// results (one model, the settings held fixed along the N curve, prefill and
/// decode tests grouped by depth and N), then the curve over N at each depth
/// with its cliffs and shape.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine/run_config.h"
#include "tune/curve.h"
#include "tune/points.h"

namespace moetune {

/// Settings that stay fixed along the N curve (everything but N, depth and the test).
using SettingsKey =
    std::tuple<int, std::string, int, int, int, FlashAttn, uint32_t, uint32_t, LoadMode>;
SettingsKey KeyOf(const RunConfig& config);
/// The settings held fixed along the N curve of `results` (not empty): those
/// with the most distinct N, then the most results.
SettingsKey CurveKey(const std::vector<const RunResult*>& results);

/// A prefill test (-p, no -n) or a decode test (-n, no -p).
bool IsPrefill(const RunConfig& config);
bool IsDecode(const RunConfig& config);

/// The results a reading works on. Points into the results it was made from,
/// which must outlive it.
struct AnalysisSlice {
  std::string model;     // the most measured model
  std::string settings;  // the settings held fixed along the N curve ("-ngl 99 -t 8 ...")
  bool has_prefill = false, has_decode = false;
  /// The model's prefill and decode results at every setting (for the
  /// comparisons of threads and micro-batch).
  std::vector<const RunResult*> tests;
  /// On the N curve's settings: depth -> N -> results.
  std::map<int, std::map<int, Cell>> by_depth;
  /// Depth -> the tokens a test adds to it (the context during the test is
  /// depth + these).
  std::map<int, int> test_tokens;
  std::vector<std::string> notes;
};

/// Slices `results`: the most measured model, prefill and decode tests only
/// (combined -pg tests are left out with a note), and for the N curve the
/// fixed settings with the most distinct N (then the most results). Empty
/// `by_depth` when there is nothing to read (the notes say why).
AnalysisSlice SliceResults(const std::vector<RunResult>& results);

/// The curve over N at each depth of the slice, ascending depth, with its
/// cliffs and shape. Adds a note when a result's repetitions were assumed.
std::vector<CurveAtDepth> BuildCurves(const AnalysisSlice& slice, const Workload& workload,
                                      const CurveRules& rules, std::vector<std::string>* notes);

}  // namespace moetune
