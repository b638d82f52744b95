#include "report/verdict_text.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

Rejection Reject(int n, RejectionKind kind) {
  Rejection r;
  r.n_cpu_moe = n;
  r.kind = kind;
  return r;
}

TEST(VerdictText, EveryRejectionKindSaysItsFigures) {
  Rejection failed = Reject(8, RejectionKind::kFailed);
  failed.failure = "oom_device: cudaMalloc failed";
  EXPECT_EQ(RejectionReason(failed), "failed to run: oom_device: cudaMalloc failed");

  Rejection cliff = Reject(10, RejectionKind::kBeyondCliff);
  cliff.cliff = {12, 11, 0.18};
  EXPECT_EQ(RejectionReason(cliff),
            "beyond the cliff: prefill drops to 18% between N=12 and N=11 (VRAM overflow)");

  Rejection deep = Reject(14, RejectionKind::kFailsAtDepth);
  deep.depth = 15360;
  deep.failure = "oom_device: kv cache";
  EXPECT_EQ(RejectionReason(deep), "fails to run at depth 15360: oom_device: kv cache");

  Rejection collapse = Reject(12, RejectionKind::kCollapses);
  collapse.depth = 32768;
  collapse.ratio = 0.15;
  collapse.reference_n = 14;
  collapse.reference_ratio = 0.64;
  EXPECT_EQ(RejectionReason(collapse),
            "prefill collapses with depth: at depth 32768 it keeps 15% of its depth-0 speed, "
            "while N=14 keeps 64%");

  Rejection inferred = Reject(13, RejectionKind::kInferredAtDepth);
  inferred.depth = 15360;
  inferred.reference_n = 14;
  EXPECT_EQ(RejectionReason(inferred),
            "more experts on the GPU than N=14, which fails to run at depth 15360: it holds more "
            "in VRAM");
  inferred.trouble = DepthTrouble::kCollapses;
  EXPECT_NE(RejectionReason(inferred).find("which collapses at depth"), std::string::npos);

  Rejection recorded = Reject(9, RejectionKind::kRecorded);
  recorded.recorded = "as an older moetune wrote it";
  EXPECT_EQ(RejectionReason(recorded), "as an older moetune wrote it");
}

TEST(VerdictText, RecommendationReasonsFollowTheRule) {
  Recommendation r;
  r.rule = RecommendationRule::kSafetyRule;
  r.n_cpu_moe = 22;
  r.edge = 21;
  r.best_n = 21;
  r.safest_tie = 21;
  r.read_on = ReadOn::kTimeToAnswer;
  r.workload = "chat";
  r.unproven = Unproven::kNoHeadroom;
  EXPECT_EQ(RecommendationReason(r),
            "N=21 is best for time to answer (chat workload); one layer more conservative than "
            "the edge (no measured GPU memory headroom for it) protects against overflow as the "
            "context grows");
  r.unproven = Unproven::kNoTargetContextRun;
  r.target_ctx = 32768;
  EXPECT_NE(RecommendationReason(r).find("no measurement at the target context (32768 tokens)"),
            std::string::npos);
  // A tie already one layer safer than the edge.
  r.safest_tie = 24;
  r.n_cpu_moe = 24;
  r.best_n = 22;
  EXPECT_EQ(RecommendationReason(r),
            "N=24 is within the noise of the best (N=22) and already one layer more conservative "
            "than the edge");

  Recommendation flat;
  flat.rule = RecommendationRule::kNoPlacementEffect;
  flat.read_on = ReadOn::kPrefill;
  flat.safest_tie = 40;
  EXPECT_EQ(RecommendationReason(flat),
            "placement does not change prefill beyond the noise; the most conservative N measured "
            "(40) is as fast and the safest");
  flat.rule = RecommendationRule::kEverySplitOverflows;
  flat.read_on = ReadOn::kDecode;
  EXPECT_EQ(RecommendationReason(flat),
            "decode only falls as experts move to the GPU: keep the experts on the CPU (N=40)");
  flat.rule = RecommendationRule::kNothingUsable;
  EXPECT_NE(RecommendationReason(flat).find("failed or was rejected"), std::string::npos);
  flat.recorded_reason = "kept as written";
  EXPECT_EQ(RecommendationReason(flat), "kept as written");
}

TEST(VerdictText, SafeNeighbourAndTheCostOfAStepBack) {
  Recommendation r;
  r.rule = RecommendationRule::kSafeNeighbour;
  r.n_cpu_moe = 12;
  r.edge = 12;
  r.target_ctx = 8192;
  r.stepped_from = SteppedFrom{11, 8192, DepthTrouble::kCollapses};
  EXPECT_EQ(RecommendationReason(r),
            "N=12 is one layer more conservative than N=11, which collapses at depth 8192, and "
            "was measured healthy at the target context (8192 tokens): the safety rule's step is "
            "taken");
  // The safety rule stepping back past an edge measured healthy at the target
  // context says what it costs and how to take the edge.
  Recommendation s;
  s.rule = RecommendationRule::kSafetyRule;
  s.n_cpu_moe = 12;
  s.edge = 11;
  s.best_n = 11;
  s.safest_tie = 11;
  s.workload = "chat";
  s.unproven = Unproven::kNoHeadroom;
  s.proven_edge = ProvenEdge{11, 0.061};
  EXPECT_NE(RecommendationReason(s).find("; N=11, measured healthy at the target context, would "
                                         "be 6.1% faster on this workload (--proven-edge takes "
                                         "it)"),
            std::string::npos)
      << RecommendationReason(s);
  // Taken on request: the reason says so and what was not proven.
  s.rule = RecommendationRule::kEdgeProvenSafe;
  s.n_cpu_moe = 11;
  s.proven_edge.reset();
  EXPECT_EQ(RecommendationReason(s),
            "N=11 is best for time to answer (chat workload) and was measured at the target "
            "context without collapse; taken as asked (--proven-edge) although there is no "
            "measured GPU memory headroom for it");
}

TEST(VerdictText, ComparisonReasonFromTheStandings) {
  DimensionComparison c;
  c.dimension = Dimension::kThreads;
  c.entries.resize(3);
  c.entries[0].value = 4;
  c.entries[1].value = 6;
  c.entries[2].value = 8;
  c.entries[0].versus_best = Standing::kTied;
  c.entries[1].versus_best = Standing::kBest;
  c.entries[2].versus_best = Standing::kWorse;
  c.chosen = 4;
  EXPECT_EQ(ComparisonReason(c),
            "threads 4 is within the noise of the best measured (6); a tie goes to the smaller "
            "value");
  c.entries[0].versus_best = Standing::kWorse;
  c.chosen = 6;
  EXPECT_EQ(ComparisonReason(c), "threads 6 is faster than every other value beyond the noise");
  c.dimension = Dimension::kMicroBatch;
  c.entries[2].versus_best = Standing::kTied;
  EXPECT_EQ(ComparisonReason(c), "n_ubatch 6 measured best");
  c.entries[2].versus_best = Standing::kUndecided;
  EXPECT_EQ(ComparisonReason(c),
            "n_ubatch could not be decided: the repetitions spread too widely to tell n_ubatch 6 "
            "from the others (machine busy?)");
}

// A phase that could not decide says so, and why, from its typed figures;
// any other decision keeps its rule.
TEST(VerdictText, DecisionRuleOfAnUndecidedPhase) {
  Decision d;
  d.phase = TunePhase::kThreads;
  d.rule = "fastest beyond the noise";
  EXPECT_EQ(DecisionRule(d), "fastest beyond the noise");
  d.undecided = Undecided{"-t 2", "decode", 0.9, 52.04, 9, "-t 8"};
  EXPECT_EQ(DecisionRule(d),
            "could not decide: the 9 repetitions of -t 2 spread from 0.9 to 52.0 t/s (decode; "
            "machine busy?); kept the starting value -t 8");
}

TEST(VerdictText, DecisionEvidenceInOrder) {
  Decision d;
  d.phase = TunePhase::kLongContext;
  d.depth_checks.push_back({12, 4096, 4608, 0.2, 0.8, true});
  Rejection r;
  r.n_cpu_moe = 12;
  r.kind = RejectionKind::kFailsAtDepth;
  r.depth = 4096;
  r.failure = "oom";
  d.rejections.push_back(r);
  d.evidence = "figures";
  Recommendation rec;
  rec.recorded_reason = "the reason";
  d.reading = rec;
  EXPECT_EQ(DecisionEvidence(d),
            "N=12 at depth 4096: prefill x0.20 of depth 0 (healthiest x0.80), COLLAPSED; N=12: "
            "fails to run at depth 4096: oom; figures; the reason");
  EXPECT_EQ(DecisionEvidence(Decision{}), "");
}

TEST(VerdictText, RuleTextsNameTheThresholds) {
  EXPECT_EQ(CliffRuleText(),
            "prefill drops below 70% of its neighbour, beyond the noise (Welch, 95%)");
  CollapseRules c;
  c.ratio = 0.5;
  EXPECT_EQ(CollapseRuleText(c), "prefill(depth)/prefill(0) below 50% of the healthiest N's ratio");
}

// The pick's headroom is told against the plan's margin, with the proof (or
// its absence) beside it: a negative headroom is never called safe silently.
TEST(VerdictText, PickSafetySaysWhyATightPickIsSafeOrThatItIsNot) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  const PickSafety clear = AssessPickSafety(300 * kMiB, 1024 * kMiB, 32000, 0.9);
  EXPECT_EQ(clear.headroom, HeadroomStanding::kClear);
  EXPECT_TRUE(clear.safe());
  EXPECT_EQ(PickSafetyText(clear, 20).rfind("headroom 300.0 MiB: the plan's 1.00 GiB margin is "
                                            "intact; measured:",
                                            0),
            0u)
      << PickSafetyText(clear, 20);

  const PickSafety proven = AssessPickSafety(-190 * kMiB, 1024 * kMiB, 32000, 0.84);
  EXPECT_EQ(proven.headroom, HeadroomStanding::kInsideMargin);
  EXPECT_TRUE(proven.tight());
  EXPECT_TRUE(proven.safe());
  const std::string p = PickSafetyText(proven, 20);
  EXPECT_NE(p.find("uses 190.0 MiB of the plan's 1.00 GiB margin"), std::string::npos) << p;
  EXPECT_NE(p.find("safe by measurement: it ran with 32000 tokens"), std::string::npos) << p;
  EXPECT_NE(p.find("prefill kept 84%"), std::string::npos) << p;

  const PickSafety unproven = AssessPickSafety(-452 * kMiB, 1024 * kMiB, std::nullopt, 0.84);
  EXPECT_FALSE(unproven.safe());
  EXPECT_FALSE(unproven.prefill_kept.has_value());
  const std::string u = PickSafetyText(unproven, 20);
  EXPECT_NE(u.find("NOT proven safe"), std::string::npos) << u;
  EXPECT_NE(u.find("--n-cpu-moe 21"), std::string::npos) << u;

  const PickSafety over = AssessPickSafety(-1224 * kMiB, 1024 * kMiB, std::nullopt, std::nullopt);
  EXPECT_EQ(over.headroom, HeadroomStanding::kOverBudget);
  EXPECT_NE(PickSafetyText(over, 20).find("200.0 MiB beyond the GPU budget"), std::string::npos)
      << PickSafetyText(over, 20);

  const PickSafety unknown = AssessPickSafety(std::nullopt, 0, std::nullopt, std::nullopt);
  EXPECT_EQ(unknown.headroom, HeadroomStanding::kUnknown);
  EXPECT_EQ(PickSafetyText(unknown, 20), "");
  for (auto h : {HeadroomStanding::kUnknown, HeadroomStanding::kClear,
                 HeadroomStanding::kInsideMargin, HeadroomStanding::kOverBudget})
    EXPECT_EQ(HeadroomStandingFromName(HeadroomStandingName(h)), h);
  EXPECT_FALSE(HeadroomStandingFromName("fine").has_value());
}

}  // namespace
}  // namespace moetune
