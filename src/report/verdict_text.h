#pragma once
/// The sentences a person reads for the typed verdicts of analyze and tune:
/// why a placement was rejected, why an N was recommended, how a dimension
/// comparison came out, what a depth check showed, and a tune decision's
/// evidence. Every text output (terminal, JSON "reason"/"evidence" fields, the
/// documents) renders them here; nothing parses them back.

#include <string>

#include "tune/analysis.h"
#include "tune/tuner.h"

namespace moetune {

/// "beyond the cliff: prefill drops to 18% between N=21 and N=20 (VRAM overflow)".
std::string RejectionReason(const Rejection& rejection);

/// "N=22 is best for time to answer (chat workload); one layer more
/// conservative than the edge (...) protects against overflow as the context
/// grows".
std::string RecommendationReason(const Recommendation& recommendation);

/// "threads 6 is within the noise of the best measured (8); a tie goes to the
/// smaller value".
std::string ComparisonReason(const DimensionComparison& comparison);

/// "N=21 at depth 4096: prefill x0.81 of depth 0 (healthiest x0.83)", with
/// ", COLLAPSED" when it collapsed.
std::string DepthCheckText(const DepthCheck& check);

/// A decision's evidence: its depth checks, its rejections ("N=8: ..."), the
/// tuner's figures, then the reason of the placement reading it follows,
/// joined with "; ".
std::string DecisionEvidence(const Decision& decision);

/// The pick's safety on the GPU: its headroom against the plan's margin, and
/// whether a measurement at the target context proved it ("headroom -190 MiB:
/// the pick uses 190 MiB of the plan's 1 GiB margin ...; safe by measurement:
/// ..."), or that it is not proven. Empty when nothing is known.
std::string PickSafetyText(const PickSafety& safety, int n_cpu_moe);

/// A decision's rule: for a phase that could not decide (Decision::undecided)
/// "could not decide: the 9 repetitions of -t 2 spread from 0.9 to 52.0 t/s
/// (decode; machine busy?); kept the starting value -t 8", else its rule.
std::string DecisionRule(const Decision& decision);

/// What the cliff rule and the collapse rule say, with their thresholds, for
/// decision tables: "prefill drops below 70% of its neighbour, beyond the
/// noise (Welch, 95%)".
std::string CliffRuleText(const CurveRules& rules = {});
std::string CollapseRuleText(const CollapseRules& rules = {});

}  // namespace moetune
