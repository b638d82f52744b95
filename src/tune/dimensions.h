#pragma once
/// The last step of reading measurements (tune/analysis.h): settings besides
/// N compared with their intervals - threads and the micro-batch - by the
/// tie rule of tune/rules.h (a tie goes to the smaller value). Also tune's
/// comparisons of the same dimensions, read from its measurements.

#include <optional>
#include <string_view>
#include <vector>

#include "engine/run_config.h"
#include "tune/rules.h"

namespace moetune {

/// A setting compared along its values.
enum class Dimension { kThreads, kMicroBatch };
/// "threads", "n_ubatch" (stable names, used in JSON).
const char* DimensionName(Dimension dimension);
std::optional<Dimension> DimensionFromName(std::string_view name);

/// A comparison along one dimension with intervals.
struct DimensionComparison {
  Dimension dimension = Dimension::kThreads;
  int n_cpu_moe = 0;  // where it was measured
  struct Entry {
    int value = 0;
    std::optional<Summary> prefill, decode;
    std::optional<Estimate> objective;
    Standing versus_best = Standing::kUnmeasured;
  };
  std::vector<Entry> entries;  // ascending value
  int chosen = 0;

  /// The best entry's value (-1 when none was measured).
  int best_value() const;
  /// Some entry is tied with the best.
  bool any_tie() const;
  /// Some entry could not be told from the best (Standing::kUndecided).
  bool any_undecided() const;
};

/// Compares `dimension` on the depth-0 results `tests` that differ only in
/// it: the group of results at `prefer_n` when it has one, else the group with
/// the most values. nullopt when no group has two values with a measurement.
std::optional<DimensionComparison> CompareDimension(const std::vector<const RunResult*>& tests,
                                                    Dimension dimension,
                                                    std::optional<int> prefer_n,
                                                    const Workload& workload,
                                                    const CurveRules& rules);

/// Tune's comparisons of threads and micro-batch, read from all its
/// measurements: for each dimension, the depth-0 results that differ only in
/// it and share one prompt size (prefill speed depends on it); of the
/// candidates, the one at the pick's N, then the one with the most summaries.
std::vector<DimensionComparison> CompareTuneDimensions(const std::vector<RunResult>& measurements,
                                                       const Workload& workload, int pick_n,
                                                       const CurveRules& rules);

}  // namespace moetune
