#pragma once
/// The reading rules of the method (docs/method.md), applied to measurements
/// from any source: the curve of speed against N at each depth (shape, cliffs),
/// prefill collapsing with depth, thread and micro-batch comparisons with
/// confidence intervals, and a recommendation under the safety rule. `moetune
/// analyze` prints this; `moetune tune` uses it on its own measurements.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_config.h"
#include "tune/curve.h"
#include "tune/objective.h"

namespace moetune {

struct AnalysisOptions {
  Workload workload{"chat", 1024, 384};
  /// The context the user will run at; depth data up to it decides collapse.
  std::optional<int64_t> target_ctx;
  /// Memory headroom measured on the GPU for each N (tune knows it; llama-bench
  /// output does not). The edge may be recommended only with positive headroom.
  std::vector<std::pair<int, int64_t>> gpu_headroom;
  CurveRules rules;
  /// Prefill at depth d, relative to depth 0, below this fraction of the
  /// healthiest placement's ratio at the same depth is a collapse.
  double collapse_ratio = 0.7;
};

/// The curve over N at one depth, with the settings held fixed.
struct CurveAtDepth {
  int depth = 0;
  std::vector<CurvePoint> points;  // ascending N
  CurveShape shape = CurveShape::kFlat;
  std::vector<Cliff> cliffs;
};

struct Rejection {
  int n_cpu_moe = 0;
  std::string reason;
};

/// Prefill at `depth` relative to depth 0 for one N.
struct DepthCheck {
  int n_cpu_moe = 0;
  int depth = 0;
  int context = 0;             // tokens in the context during the test (depth + test)
  double ratio = 0;            // prefill(depth) / prefill(0)
  double reference_ratio = 0;  // the healthiest N's ratio at this depth
  bool collapsed = false;
};

/// A comparison along one dimension (threads, micro-batch) with intervals.
struct DimensionComparison {
  std::string dimension;  // "threads", "n_ubatch"
  int n_cpu_moe = 0;      // where it was measured
  struct Entry {
    int value = 0;
    std::optional<Summary> prefill, decode;
    std::optional<Estimate> objective;
    int versus_best = 0;  // -1 worse than the best, 0 tied, +1 (the best itself)
  };
  std::vector<Entry> entries;  // ascending value
  int chosen = 0;
  std::string reason;
};

struct Recommendation {
  std::optional<int> n_cpu_moe;
  bool measured = true;         // false: a rule implies a value that was not measured
  std::optional<int> threads;   // when the data varies threads
  std::optional<int> n_ubatch;  // when the data varies the micro-batch
  int edge = -1;                // the most aggressive N tied with the best
  std::string rule;             // "safety rule", "edge proven safe", "no placement effect", ...
  std::string reason;           // one line a person reads
};

struct Analysis {
  std::string model;                     // the model analysed (file name as recorded)
  std::string settings;                  // the settings held fixed along the N curve
  std::vector<CurveAtDepth> curves;      // ascending depth; curves[0] is the shallowest
  CurveShape shape = CurveShape::kFlat;  // of the shallowest curve
  std::vector<Cliff> cliffs;             // of the shallowest curve
  std::vector<Rejection> rejected;
  std::vector<DepthCheck> depth_checks;
  std::vector<DimensionComparison> comparisons;
  Recommendation recommendation;
  std::vector<std::string> notes;
  bool has_prefill = false, has_decode = false;
};

/// Applies the rules. Never fails: with too little data the notes say what to measure.
Analysis Analyze(const std::vector<RunResult>& results, const AnalysisOptions& options);

}  // namespace moetune
