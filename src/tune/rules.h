#pragma once
/// The rules of the method (docs/method.md) that more than one reader applies,
/// each written once, with every threshold named once and its reason given:
///   - the tie rule: is A tied with B (CompareEstimates), and which candidate a
///     comparison chooses (Choose): every tune phase, analyze's curve and its
///     dimension comparisons, and the exhaustive grid;
///   - the collapse rule: prefill falling with depth far more than attention
///     over the cache explains (Collapses): analyze's depth checks, tune's KV
///     cache phase and its final check;
///   - the constants of the curve reading (CurveRules), of analyze
///     (AnalysisRules) and of tune's search (TuneRules).
/// The best-repetition rule the collapse rule reads speeds with is
/// BestRepetition (stats/summary.h).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "stats/summary.h"
#include "tune/objective.h"

namespace moetune {

/// An estimate with its spread, higher is better (tokens/s, requests/s).
struct Estimate {
  double mean = 0;
  std::optional<double> sd;
  int n = 1;
};
Estimate FromSummary(const Summary& s);

/// The thresholds of reading a curve over N and of the tie rule.
struct CurveRules {
  /// A cliff: prefill between two neighbouring N falls below this fraction.
  /// The VRAM cliff of a silent spill takes prefill to a fifth or less, while
  /// the ordinary slope between neighbours is a few percent: 0.7 separates
  /// them with room on both sides.
  double cliff_ratio = 0.7;
  /// Without a spread to test against (one repetition), a drop is taken as a
  /// cliff only below cliff_ratio times this (about half), twice as far from
  /// the ordinary slope.
  double no_spread_cliff_factor = 0.7;
  /// A drop counts as the VRAM cliff only from a point within this fraction of
  /// the best so far: the cliff is where speed was at its best, not the steady
  /// fall of a curve that overflows everywhere.
  double cliff_top_fraction = 0.9;
  /// A curve whose best and worst differ by less than this fraction is flat
  /// (placement makes no difference worth a risk).
  double flat_fraction = 0.05;
  /// Confidence of the tie rule (Welch's test): a difference counts only
  /// beyond the noise at this level.
  double level = 0.95;
  /// Differences under this fraction are ties whatever the statistics: 2% is
  /// below what a user notices and below run-to-run drift on a quiet machine.
  double min_relative = 0.02;
  /// A comparison the test cannot separate is undecided, not a tie, when the
  /// 95% interval of either candidate reaches further than this fraction of
  /// its mean on either side. A tie says the difference is below what matters
  /// (min_relative); an interval of +-25% cannot tell 2% from the 5-30% that
  /// threads, micro-batch or flash attention move, nor 1.1 t/s from 54.7 with
  /// two repetitions. On a quiet machine three repetitions spread by 1-2%
  /// (an interval of +-2.5-5% at 2 degrees of freedom), so +-25% means the
  /// repetitions themselves disagree: something else ran on the machine.
  double undecided_width = 0.25;
};

/// The thresholds of the collapse rule.
struct CollapseRules {
  /// A collapse keeps less than this fraction of the reference's ratio
  /// prefill(depth)/prefill(0): a spill takes prefill to a fifth or less at
  /// depth, attention over the cache costs healthy placements alike.
  double ratio = 0.7;
  /// ... and depth adds more than this many times the reference's time per
  /// token: attention costs every placement about the same time per token
  /// (a larger share of a fast placement's time, so the ratio alone would
  /// call a fast healthy placement collapsed); a spill costs several times it.
  double added_time_factor = 3;
  /// The reference is the healthiest placement at least this fraction as fast
  /// at depth 0 as the one judged: a much slower placement is no yardstick
  /// for attention's share of the time.
  double comparable_speed = 1.0 / 3;
};

/// Every threshold `moetune analyze` (and tune's reading of its placements) uses.
struct AnalysisRules {
  CurveRules curve;
  CollapseRules collapse;
};

/// What a reading of measurements (tune/analysis.h) is asked, and its rules.
struct AnalysisOptions {
  Workload workload{"chat", 1024, 384};
  /// The context the user will run at; depth data up to it decides collapse.
  std::optional<int64_t> target_ctx;
  /// Memory headroom measured on the GPU for each N (tune knows it; llama-bench
  /// output does not). The edge may be recommended only with positive headroom.
  std::vector<std::pair<int, int64_t>> gpu_headroom;
  /// Take the edge when it was measured healthy at the target context, instead
  /// of stepping back from it (the safety rule's layer, or a tie going to a
  /// safer N): `--proven-edge`.
  bool take_proven_edge = false;
  AnalysisRules rules;
};

/// The constants of tune's search (the phases of tune/tuner.h), besides the
/// options a user sets (repetitions, budget).
struct TuneRules {
  AnalysisRules analysis;
  /// The first N measured, relative to the plan's predicted boundary b: both
  /// sides of it (the plan is right to a layer or two), and three layers
  /// safer for the shape of the curve on the CPU side.
  std::array<int, 4> start_offsets = {-1, 0, 1, 3};
  /// Walking toward the GPU while the edge keeps improving: the first step,
  /// doubled each round (the plan's boundary is usually close; when it is
  /// not, doubling finds the edge in a few rounds).
  int first_step_toward_gpu = 1;
  /// Walking toward the CPU (nothing usable yet, or a curve still rising at
  /// its CPU end): the first step, doubled each round.
  int first_step_toward_cpu = 3;
  /// Each round's step is this many times the last (doubling).
  int step_growth = 2;
  /// Rounds of the placement search: 0..n_layer is at most 100 layers, which
  /// doubling steps and bisection cover in far fewer.
  int placement_rounds = 24;
  /// Rounds of the long-context validation (candidates, then bisection of the
  /// boundary at depth to one layer).
  int long_context_rounds = 16;
  /// Rounds of extra depth-0 repetitions when a tie pulls the recommendation
  /// away from the edge: two are enough to narrow a tie or show it is real.
  int tie_narrowing_rounds = 2;
  /// Rounds of extra repetitions for contenders tied with the best in a phase
  /// (each adds `TuneOptions::repetitions`, up to `max_repetitions`).
  int repetition_rounds = 4;
  /// The first long-context depth is the target context divided by this (the
  /// second is the target context less the prompt): a quarter shows a collapse
  /// on its way before the full depth confirms it.
  int first_depth_divisor = 4;
  /// Micro-batches above the workload's prompt cannot help it, except up to
  /// llama.cpp's default (512), which is always a candidate.
  int ubatch_always_tried = 512;
  /// The anchor (the first decode measured) is measured again after this many
  /// engine calls: drift during a long tune (thermal throttling, a program that
  /// starts halfway) shows as the same configuration running slower, the way
  /// llama.cpp's kernel tuner re-measures a fixed reference between candidates.
  int anchor_every = 10;
  /// The anchor drifted when its best repetition is slower than its first
  /// measurement's by more than this fraction: 5% is over twice the tie rule's
  /// floor (best repetitions vary by a percent or two on a quiet machine) and
  /// under what a throttling laptop or a second job costs.
  double drift_fraction = 0.05;
  /// A run over RPC hosts is ended as a failure of its hosts when it takes
  /// this many times what the runs so far say it should (and at least
  /// `slow_host_floor_seconds`): a host or link far slower than when it was
  /// measured (a busy host, a congested or renegotiated link) would otherwise
  /// hold the tune until the budget or the engine's per-test limit.
  double slow_host_factor = 5;
  double slow_host_floor_seconds = 60;
};

/// Whether the 95% interval (rules.level) of `e` reaches further than
/// rules.undecided_width of its mean on either side; false without a spread.
bool TooWideToTell(const Estimate& e, const CurveRules& rules);

/// The tie rule's comparison: -1 / 0 / +1 when a is worse than, tied with or
/// better than b (Welch's test at rules.level; differences under
/// rules.min_relative, or without a known spread, are ties).
int CompareEstimates(const Estimate& a, const Estimate& b, const CurveRules& rules);

/// Where a candidate stands against the best of its comparison: kUndecided
/// when the test cannot separate it from the best and the interval of either
/// is too wide to call that a tie (CurveRules::undecided_width).
enum class Standing { kBest, kTied, kWorse, kUnmeasured, kUndecided };
/// "best", "tie", "worse", "not measured", "undecided" (stable names, used in JSON).
const char* StandingName(Standing standing);
std::optional<Standing> StandingFromName(std::string_view name);

/// The tie rule applied to one comparison.
struct Choice {
  std::optional<std::size_t> best;  // the highest mean (the earliest of equal means)
  /// The earliest candidate not shown worse than the best (best, tied or
  /// undecided); a caller that must not guess checks undecided() first.
  std::optional<std::size_t> chosen;
  std::vector<Standing> standings;  // each candidate against the best
  /// The best stands alone: no other candidate is tied with it or undecided.
  bool clear() const;
  /// Some candidate could not be told from the best (Standing::kUndecided):
  /// the measurements say nothing, and a tie would be a guess.
  bool undecided() const;
};

/// Reads candidates given in order of preference (a tie goes to the earliest:
/// fewer threads, the smaller micro-batch, the safer N, the default setting);
/// nullopt is a candidate without a measurement.
Choice Choose(const std::vector<std::optional<Estimate>>& candidates, const CurveRules& rules);

/// The prefill of one placement on an empty context and at a depth, each its
/// best repetition (BestRepetition): interference only ever slows a run down,
/// so one slow repetition must not pass for a collapse.
struct DepthSpeeds {
  double depth0 = 0;
  double deep = 0;
  bool valid() const { return depth0 > 0 && deep > 0; }
  /// prefill(depth) / prefill(0).
  double ratio() const { return deep / depth0; }
  /// Seconds per token that depth adds.
  double added() const { return 1.0 / deep - 1.0 / depth0; }
};

/// The collapse rule: `candidate`'s ratio falls below rules.ratio times the
/// reference's, and depth adds more than rules.added_time_factor times the
/// reference's time per token (a spill, not attention). False when either is
/// not valid.
bool Collapses(const DepthSpeeds& candidate, const DepthSpeeds& reference,
               const CollapseRules& rules);

/// The reference for placement `k` among placements measured at one depth:
/// the one with the highest ratio among those at least
/// rules.comparable_speed as fast as `k` at depth 0 (`k` itself when none
/// is healthier). Every entry must be valid.
std::size_t CollapseReference(const std::vector<DepthSpeeds>& placements, std::size_t k,
                              const CollapseRules& rules);

}  // namespace moetune
