#include "report/verdict_text.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "config/flags.h"
#include "util/units.h"

namespace moetune {
namespace {

std::string ReadOnText(const Recommendation& r) {
  switch (r.read_on) {
    case ReadOn::kTimeToAnswer:
      return fmt::format("time to answer ({} workload)", r.workload);
    case ReadOn::kPrefill:
      return "prefill";
    case ReadOn::kDecode:
      break;
  }
  return "decode";
}

std::string UnprovenText(const Recommendation& r) {
  switch (r.unproven) {
    case Unproven::kNotApplicable:
      return "";
    case Unproven::kNoHeadroom:
      return "no measured GPU memory headroom for it";
    case Unproven::kNoTargetContextRun:
      return fmt::format("no measurement at the target context ({} tokens)",
                         r.target_ctx.value_or(0));
    case Unproven::kNoTargetContextGiven:
      break;
  }
  return "no target context given (--ctx)";
}

std::string SafetyRuleReason(const Recommendation& r) {
  const int pick = r.n_cpu_moe.value_or(r.edge + 1);
  if (pick == r.safest_tie && r.safest_tie > r.edge) {
    return fmt::format(
        "N={} is within the noise of the best (N={}) and already one layer more conservative "
        "than the edge",
        pick, r.best_n);
  }
  return fmt::format(
      "N={} is best for {}; one layer more conservative than the edge ({}) protects against "
      "overflow as the context grows",
      r.edge, ReadOnText(r), UnprovenText(r));
}

std::string SafeNeighbourReason(const Recommendation& r) {
  const SteppedFrom from = r.stepped_from.value_or(SteppedFrom{});
  return fmt::format(
      "N={} is one layer more conservative than N={}, which {} at depth {}, and was measured "
      "healthy at the target context ({} tokens): the safety rule's step is taken",
      r.n_cpu_moe.value_or(r.edge), from.n_cpu_moe,
      from.trouble == DepthTrouble::kFails ? "fails to run" : "collapses", from.depth,
      r.target_ctx.value_or(0));
}

std::string EdgeProvenReason(const Recommendation& r) {
  const int pick = r.n_cpu_moe.value_or(r.safest_tie);
  if (r.unproven != Unproven::kNotApplicable) {  // taken on request
    return fmt::format(
        "N={} is best for {} and was measured at the target context without collapse; taken as "
        "asked (--proven-edge) although there is {}",
        pick, ReadOnText(r), UnprovenText(r));
  }
  return fmt::format(
      "N={} is best for {} and was measured at the target context without collapse, with GPU "
      "headroom left",
      pick, ReadOnText(r));
}

// What stepping back past an edge measured healthy at the target context
// costs, and how to take it instead.
std::string ProvenEdgeCost(const Recommendation& r) {
  if (!r.proven_edge) return "";
  const ProvenEdge& e = *r.proven_edge;
  const std::string on =
      r.read_on == ReadOn::kTimeToAnswer ? "on this workload" : "for " + ReadOnText(r);
  std::string cost;
  if (!e.gain) {
    cost =
        fmt::format("N={}, measured healthy at the target context, is faster {}", e.n_cpu_moe, on);
  } else {
    cost =
        fmt::format("N={}, measured healthy at the target context, would be {:.1f}% {} {}",
                    e.n_cpu_moe, std::abs(*e.gain) * 100, *e.gain >= 0 ? "faster" : "slower", on);
  }
  return "; " + cost + " (--proven-edge takes it)";
}

}  // namespace

std::string RejectionReason(const Rejection& r) {
  switch (r.kind) {
    case RejectionKind::kFailed:
      return "failed to run: " + r.failure;
    case RejectionKind::kBeyondCliff:
      return fmt::format(
          "beyond the cliff: prefill drops to {:.0f}% between N={} and N={} (VRAM overflow)",
          r.cliff.prefill_ratio * 100, r.cliff.n_cpu_moe_safe, r.cliff.n_cpu_moe_collapsed);
    case RejectionKind::kFailsAtDepth:
      return fmt::format("fails to run at depth {}: {}", r.depth, r.failure);
    case RejectionKind::kCollapses:
      return fmt::format(
          "prefill collapses with depth: at depth {} it keeps {:.0f}% of its depth-0 speed, "
          "while N={} keeps {:.0f}%",
          r.depth, r.ratio * 100, r.reference_n, r.reference_ratio * 100);
    case RejectionKind::kInferredAtDepth:
      return fmt::format(
          "more experts on the GPU than N={}, which {} at depth {}: it holds more in VRAM",
          r.reference_n, r.trouble == DepthTrouble::kFails ? "fails to run" : "collapses", r.depth);
    case RejectionKind::kRecorded:
      break;
  }
  return r.recorded;
}

std::string RecommendationReason(const Recommendation& r) {
  if (!r.recorded_reason.empty()) return r.recorded_reason;
  switch (r.rule) {
    case RecommendationRule::kNothingUsable:
      return "every measured placement failed or was rejected; see the rejections";
    case RecommendationRule::kNoPlacementEffect:
      return fmt::format(
          "placement does not change {} beyond the noise; the most conservative N measured ({}) "
          "is as fast and the safest",
          ReadOnText(r), r.n_cpu_moe.value_or(r.safest_tie));
    case RecommendationRule::kEverySplitOverflows:
      return fmt::format(
          "{} only falls as experts move to the GPU: keep the experts on the CPU (N={})",
          ReadOnText(r), r.safest_tie);
    case RecommendationRule::kEdgeProvenSafe:
      return EdgeProvenReason(r) + ProvenEdgeCost(r);
    case RecommendationRule::kSafeNeighbour:
      return SafeNeighbourReason(r);
    case RecommendationRule::kProvenAtTarget:
      return fmt::format(
          "N={} was measured healthy at the target context ({} tokens); the safety rule's N={} "
          "was not, and the plan leaves it without its margin there (headroom -{})",
          r.n_cpu_moe.value_or(-1), r.target_ctx.value_or(0), r.unproven_pick,
          FormatBytes(Bytes(-r.unproven_headroom)));
    case RecommendationRule::kSafetyRule:
      break;
  }
  return SafetyRuleReason(r) + ProvenEdgeCost(r);
}

std::string ComparisonReason(const DimensionComparison& c) {
  const char* dimension = DimensionName(c.dimension);
  const int best = c.best_value();
  if (c.any_undecided()) {
    return fmt::format(
        "{} could not be decided: the repetitions spread too widely to tell {} {} from the "
        "others (machine busy?)",
        dimension, dimension, best);
  }
  if (c.chosen == best && !c.any_tie()) {
    return fmt::format("{} {} is faster than every other value beyond the noise", dimension,
                       c.chosen);
  }
  if (c.chosen == best) return fmt::format("{} {} measured best", dimension, c.chosen);
  return fmt::format(
      "{} {} is within the noise of the best measured ({}); a tie goes to the smaller value",
      dimension, c.chosen, best);
}

std::string PickSafetyText(const PickSafety& s, int n_cpu_moe) {
  std::string plan;
  const std::string margin = FormatBytes(Bytes(s.margin_bytes));
  switch (s.headroom) {
    case HeadroomStanding::kUnknown:
      break;
    case HeadroomStanding::kClear:
      plan = fmt::format("headroom {}: the plan's {} margin is intact",
                         FormatBytes(Bytes(s.headroom_bytes)), margin);
      break;
    case HeadroomStanding::kInsideMargin:
      plan = fmt::format(
          "headroom -{}: the pick uses {} of the plan's {} margin (the GPU budget is not "
          "exceeded)",
          FormatBytes(Bytes(-s.headroom_bytes)), FormatBytes(Bytes(-s.headroom_bytes)), margin);
      break;
    case HeadroomStanding::kOverBudget:
      plan = fmt::format("headroom -{}: the plan puts the pick {} beyond the GPU budget",
                         FormatBytes(Bytes(-s.headroom_bytes)),
                         FormatBytes(Bytes(-s.headroom_bytes - s.margin_bytes)));
      break;
  }
  std::string proof;
  if (s.proven_depth) {
    proof = fmt::format("{} it ran with {} tokens in the context without failing or collapsing{}",
                        s.tight() ? "safe by measurement:" : "measured:", *s.proven_depth,
                        s.prefill_kept ? fmt::format(" (prefill kept {:.0f}% of its empty-context "
                                                     "speed)",
                                                     *s.prefill_kept * 100)
                                       : "");
  } else if (s.tight()) {
    proof = fmt::format(
        "NOT proven safe: it was not measured at the target context; {} {} keeps more of the "
        "margin, or tune again with a larger --budget to measure it",
        Flag(FlagId::kNCpuMoe).spelling, n_cpu_moe + 1);
  }
  if (plan.empty()) return proof;
  return proof.empty() ? plan : plan + "; " + proof;
}

std::string DepthCheckText(const DepthCheck& c) {
  return fmt::format("N={} at depth {}: prefill x{:.2f} of depth 0 (healthiest x{:.2f}){}",
                     c.n_cpu_moe, c.depth, c.ratio, c.reference_ratio,
                     c.collapsed ? ", COLLAPSED" : "");
}

std::string DecisionEvidence(const Decision& d) {
  std::vector<std::string> parts;
  for (const auto& c : d.depth_checks) parts.push_back(DepthCheckText(c));
  for (const auto& r : d.rejections)
    parts.push_back(fmt::format("N={}: {}", r.n_cpu_moe, RejectionReason(r)));
  if (!d.evidence.empty()) parts.push_back(d.evidence);
  if (d.reading) parts.push_back(RecommendationReason(*d.reading));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

std::string DecisionRule(const Decision& d) {
  if (!d.undecided) return d.rule;
  const Undecided& u = *d.undecided;
  if (u.repetitions == 0) {
    return fmt::format("could not decide: the intervals are too wide; kept the starting value {}",
                       u.kept);
  }
  return fmt::format(
      "could not decide: the {} repetitions of {} spread from {:.1f} to {:.1f} t/s ({}; machine "
      "busy?); kept the starting value {}",
      u.repetitions, u.candidate, u.low, u.high, u.measure, u.kept);
}

std::string CliffRuleText(const CurveRules& rules) {
  return fmt::format(
      "prefill drops below {:.0f}% of its neighbour, beyond the noise (Welch, {:.0f}%)",
      rules.cliff_ratio * 100, rules.level * 100);
}

std::string CollapseRuleText(const CollapseRules& rules) {
  return fmt::format("prefill(depth)/prefill(0) below {:.0f}% of the healthiest N's ratio",
                     rules.ratio * 100);
}

}  // namespace moetune
