#pragma once
/// The fourth step of reading measurements (tune/analysis.h): the N to run
/// with, under the safety rule of docs/method.md, as a typed verdict - the
/// rule that decided and the figures its reason is rendered from (in report/).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tune/curve.h"
#include "tune/rejections.h"
#include "tune/rules.h"

namespace moetune {

/// The rule that decided the placement.
enum class RecommendationRule {
  kNothingUsable,        // every measured placement failed or was rejected
  kNoPlacementEffect,    // a flat curve: the most conservative N tied with the best
  kEverySplitOverflows,  // a monotonic curve: experts stay on the CPU
  kEdgeProvenSafe,       // the edge, measured at the target context with GPU headroom
  kSafetyRule,           // one layer more conservative than the edge
  kSafeNeighbour,        // the edge, one layer safer than a placement out at depth, and
                         // measured healthy at the target context
  kProvenAtTarget,       // the safety rule's pick has no room at the target context in the
                         // plan and was not measured there: the most aggressive placement
                         // measured healthy there instead
};
/// "nothing usable", "no placement effect", "every split overflows", "edge
/// proven safe", "safety rule", "safe neighbour", "proven at the target
/// context" (stable names, used in JSON).
const char* RecommendationRuleName(RecommendationRule rule);
std::optional<RecommendationRule> RecommendationRuleFromName(std::string_view name);

/// What "best" was read on.
enum class ReadOn {
  kTimeToAnswer,  // the workload's time to answer (prefill and decode measured)
  kPrefill,
  kDecode,
};
/// "time_to_answer", "prefill", "decode".
const char* ReadOnName(ReadOn read_on);
std::optional<ReadOn> ReadOnFromName(std::string_view name);

/// Why the edge was not proven safe (the safety rule's reason).
enum class Unproven {
  kNotApplicable,         // the edge was proven, or the rule is not the safety rule
  kNoHeadroom,            // no measured GPU memory headroom for it
  kNoTargetContextRun,    // no measurement at the target context
  kNoTargetContextGiven,  // no target context given (--ctx)
};
/// "", "no_headroom", "no_target_context_run", "no_target_context".
const char* UnprovenName(Unproven unproven);
std::optional<Unproven> UnprovenFromName(std::string_view name);

/// The placement the safety rule's layer was taken from (kSafeNeighbour): the
/// nearest more aggressive one measured, out for what it did at a depth within
/// the target context.
struct SteppedFrom {
  int n_cpu_moe = 0;
  int depth = 0;
  DepthTrouble trouble = DepthTrouble::kCollapses;
};

/// An edge measured healthy at the target context that the pick is more
/// conservative than (the safety rule's step, or a tie going to the safer N):
/// what taking it instead would give.
struct ProvenEdge {
  int n_cpu_moe = 0;
  /// How much better the edge is than the pick on what "best" was read on
  /// (0.05: 5% faster); nullopt when the pick was not measured.
  std::optional<double> gain;
};

struct Recommendation {
  std::optional<int> n_cpu_moe;
  bool measured = true;         // false: a rule implies a value that was not measured
  std::optional<int> threads;   // when the data varies threads
  std::optional<int> n_ubatch;  // when the data varies the micro-batch
  int edge = -1;                // the most aggressive N tied with the best
  RecommendationRule rule = RecommendationRule::kNothingUsable;
  // The figures its reason is rendered from.
  int best_n = -1;      // the best measured N
  int safest_tie = -1;  // the most conservative N tied with the best
  ReadOn read_on = ReadOn::kTimeToAnswer;
  std::string workload;  // the workload's name, when read on its time to answer
  Unproven unproven = Unproven::kNotApplicable;
  std::optional<int64_t> target_ctx;
  std::optional<SteppedFrom> stepped_from;  // kSafeNeighbour
  std::optional<ProvenEdge> proven_edge;    // when the pick steps back past a proven edge
  /// kProvenAtTarget: the safety rule's pick it replaces, and that pick's
  /// headroom in the plan at the target context (negative).
  int unproven_pick = -1;
  int64_t unproven_headroom = 0;
  /// Read from a file written before the figures were recorded: its reason as
  /// the file gave it (rendered as it is; empty otherwise).
  std::string recorded_reason;
};

/// Recommends an N on the shallowest curve `base`, leaving out the rejected
/// placements. The safety rule steps back once: from the peak, which is the
/// edge unless a more aggressive placement is out for what it did at depth
/// (then the edge, measured healthy at the target context, is the step). `read_on` names what the
/// points' objective is. Adds a note when the recommended N was not measured, or is the largest N
/// measured on a curve that only falls toward the GPU.
Recommendation Recommend(const CurveAtDepth& base, const RejectionReading& rejections,
                         ReadOn read_on, const AnalysisOptions& options,
                         std::vector<std::string>* notes);

}  // namespace moetune
