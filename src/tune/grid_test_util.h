#pragma once
/// The exhaustive reference a tune is checked against (scenario tests,
/// docs/tune.md): every configuration the tuner could choose, measured the way
/// the tuner measures (prefill and decode at depth 0 and at the long-context
/// depths, the same repetitions), each settings' curve over N read by the same
/// rules (tune/analysis.h: failures, cliffs, collapse with depth, the safety
/// rule with the same GPU headroom), and the candidates compared by the same
/// objective with the same tie rule. A tie goes to the safer, simpler
/// configuration: the earliest in GridCandidateSettings' order.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "tune/analysis.h"
#include "tune/tuner.h"

namespace moetune {

/// One settings combination (everything but N) with its whole N curve.
struct GridSlice {
  TuneSettings settings;              // n: the safety rule's N on this slice (valid when `usable`)
  Analysis analysis;                  // the N curve read at the target context
  bool usable = false;                // the rules recommend an N
  std::optional<Estimate> objective;  // requests/s of (settings, n) at depth 0
};

struct GridResult {
  TuneSpace space;
  TuneOptions options;              // as measured (n_prompt raised like the tuner's)
  std::vector<GridSlice> slices;    // in preference order
  std::optional<std::size_t> pick;  // index into slices
  std::size_t runs = 0;             // engine tests
  std::size_t samples = 0;          // repetitions of those tests
  std::vector<RunResult> results;
};

/// Every settings combination the tuner may end at, N left at 0, in the order
/// of preference among ties: f16 before q8_0 KV cache, memory-mapped before
/// loaded, the space's flash-attention setting before the other, smaller
/// micro-batch, fewer threads; across devices, llama.cpp's device order before
/// the others (TuneSpace::other_orders).
std::vector<TuneSettings> GridCandidateSettings(const TuneSpace& space, const TuneOptions& options);

/// The N values the tuner may choose: 0..n_layer, or the fixed N when
/// placement does not matter (no GPU) or the model has no experts.
std::vector<int> GridPlacements(const TuneSpace& space);

/// Measures every (settings, N) at depth 0 and at LongContextDepths, reads
/// each slice and picks the best slice by the objective (ties: the earliest).
GridResult RunExhaustiveGrid(Engine& engine, const TuneSpace& space, const TuneOptions& options);

/// A tune's pick judged with the grid's measurements.
struct GridVerdict {
  bool found = false;  // the pick's settings are in the grid
  bool exact = false;  // the same settings and N as the grid's pick
  /// The pick's objective is within the noise of the grid pick's (or better),
  /// by CompareEstimates on the grid's measurements of both.
  bool tie = false;
  /// On the grid's reading of the pick's slice (same settings, every N): the
  /// pick is not rejected (failed, beyond a cliff, failed or collapsed at
  /// depth) and obeys the slice's rule: at least one layer more conservative
  /// than the slice's edge under the safety rule; the edge or more
  /// conservative when the slice's rule is kEdgeProvenSafe,
  /// kNoPlacementEffect or kEverySplitOverflows.
  bool safe = false;
  std::optional<Estimate> objective;      // the pick's, from the grid's measurements
  std::optional<double> predicted_ratio;  // noise-free objective (sim records), pick / grid pick
  int slice_edge = -1;                    // the edge on the pick's slice
  RecommendationRule slice_rule = RecommendationRule::kNothingUsable;  // on the pick's slice
  /// The pick's rejection on its slice, when it is rejected there.
  std::optional<Rejection> rejection;
  std::string explanation;

  /// Acceptance: the same configuration, or a tie that is safe.
  bool accepted() const { return exact || (found && tie && safe); }
};

GridVerdict JudgeAgainstGrid(const GridResult& grid, const ServerConfig& pick);

/// "-ncmoe 21 -t 8 -ub 512 -fa on" for tables; with `space` across devices,
/// the order's -dev list too.
std::string DescribeSettings(const TuneSettings& settings, const TuneSpace* space = nullptr);

}  // namespace moetune
