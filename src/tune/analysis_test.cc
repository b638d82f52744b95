#include "tune/analysis.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace moetune {
namespace {

// Handwritten sweeps: tokens/s per N with a small deterministic spread.
RunResult Result(int n, bool prefill, double tps, int depth = 0, int threads = 8, int ub = 512,
                 double spread = 0.01, int reps = 5) {
  RunResult r;
  r.config.model = "m.gguf";
  r.config.placement.n_cpu_moe = n;
  r.config.n_ubatch = ub;
  r.config.threads = threads;
  r.config.n_depth = depth;
  (prefill ? r.config.n_prompt : r.config.n_gen) = prefill ? 512 : 128;
  for (int i = 0; i < reps; ++i) {
    const double wiggle = (i % 2 == 0 ? 1 : -1) * spread * (1 + i % 3) / 2;
    r.samples_ts.push_back(tps * (1 + wiggle));
  }
  r.avg_ts = tps;
  return r;
}

std::vector<RunResult> Sweep(const std::vector<std::pair<int, std::pair<double, double>>>& pts,
                             int depth = 0, double spread = 0.01) {
  std::vector<RunResult> out;
  for (const auto& [n, v] : pts) {
    out.push_back(Result(n, true, v.first, depth, 8, 512, spread));
    out.push_back(Result(n, false, v.second, depth, 8, 512, spread));
  }
  return out;
}

TEST(AnalysisTest, PeakTakesOneLayerMoreConservative) {
  // Rises as experts move to the GPU, best at N=20, then gently falls.
  auto rs = Sweep({{16, {300, 30}},
                   {18, {330, 33}},
                   {20, {360, 36}},
                   {22, {340, 34}},
                   {24, {320, 32}},
                   {26, {300, 30}}});
  const Analysis a = Analyze(rs, {});
  EXPECT_EQ(a.shape, CurveShape::kPeak);
  EXPECT_TRUE(a.cliffs.empty());
  ASSERT_TRUE(a.recommendation.n_cpu_moe);
  EXPECT_EQ(a.recommendation.edge, 20);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 21);
  EXPECT_FALSE(a.recommendation.measured);  // 21 was not measured: the rule implies it
  EXPECT_EQ(a.recommendation.rule, RecommendationRule::kSafetyRule);
}

TEST(AnalysisTest, CliffTakesTheStepBeforeItThenOneMore) {
  auto rs = Sweep({{10, {60, 25}},
                   {11, {70, 27}},
                   {12, {400, 34}},
                   {13, {390, 33}},
                   {14, {380, 32}},
                   {15, {370, 31}}});
  const Analysis a = Analyze(rs, {});
  EXPECT_EQ(a.shape, CurveShape::kCliff);
  ASSERT_EQ(a.cliffs.size(), 1u);
  EXPECT_EQ(a.cliffs[0].n_cpu_moe_safe, 12);
  EXPECT_EQ(a.cliffs[0].n_cpu_moe_collapsed, 11);
  EXPECT_NEAR(a.cliffs[0].prefill_ratio, 70.0 / 400.0, 0.01);
  ASSERT_TRUE(a.recommendation.n_cpu_moe);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 13);
  // Both collapsed placements are rejected, with the cliff as the reason.
  ASSERT_EQ(a.rejected.size(), 2u);
  EXPECT_EQ(a.rejected[0].n_cpu_moe, 10);
  EXPECT_EQ(a.rejected[1].kind, RejectionKind::kBeyondCliff);
  EXPECT_EQ(a.rejected[1].cliff.n_cpu_moe_safe, 12);
  EXPECT_EQ(a.rejected[1].cliff.n_cpu_moe_collapsed, 11);
}

TEST(AnalysisTest, MonotonicKeepsExpertsOnTheCpu) {
  // Every split overflows: speed only falls as experts move to the GPU.
  auto rs = Sweep({{0, {40, 10}},
                   {8, {80, 14}},
                   {16, {140, 18}},
                   {24, {200, 22}},
                   {32, {260, 26}},
                   {40, {300, 28}}});
  const Analysis a = Analyze(rs, {});
  EXPECT_EQ(a.shape, CurveShape::kMonotonic);
  ASSERT_TRUE(a.recommendation.n_cpu_moe);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 40);
  EXPECT_EQ(a.recommendation.rule, RecommendationRule::kEverySplitOverflows);
}

TEST(AnalysisTest, FlatCurvePicksTheSafestPlacement) {
  // A CPU-only engine: placement changes nothing but noise.
  auto rs = Sweep({{0, {100, 20}}, {2, {101, 20.2}}, {4, {99, 19.9}}, {6, {100.5, 20.1}}}, 0, 0.03);
  const Analysis a = Analyze(rs, {});
  EXPECT_EQ(a.shape, CurveShape::kFlat);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 6);
  EXPECT_EQ(a.recommendation.rule, RecommendationRule::kNoPlacementEffect);
}

TEST(AnalysisTest, FlatCurveKeepsTheSafestEvenWhenItIsAHairSlower) {
  // Prefill flat within 3% (the shape), decode at the last N slower by 3% with
  // tight repetitions: the objective's tie rule calls it worse, but placement
  // has no effect, so the most conservative N measured is the answer.
  auto rs = Sweep({{0, {100, 20}}, {2, {101, 20.0}}, {4, {99, 19.4}}}, 0, 0.001);
  const Analysis a = Analyze(rs, {});
  EXPECT_EQ(a.shape, CurveShape::kFlat);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 4);
  EXPECT_EQ(a.recommendation.rule, RecommendationRule::kNoPlacementEffect);
}

TEST(AnalysisTest, NoisyEdgeIsNotPickedByANaiveMaximum) {
  // N=12 has the highest mean only thanks to one lucky run; it is statistically
  // tied with N=14, which is already more conservative than the edge.
  std::vector<RunResult> rs;
  auto noisy = [&](int n, std::vector<double> pp, double tg) {
    RunResult p = Result(n, true, 0);
    p.samples_ts = std::move(pp);
    rs.push_back(p);
    rs.push_back(Result(n, false, tg));
  };
  noisy(10, {150, 160, 155, 158, 152}, 28);  // collapsed
  noisy(12, {300, 420, 310, 305, 295}, 34);  // one lucky run
  noisy(13, {330, 336, 328, 332, 334}, 34);
  noisy(14, {320, 326, 318, 322, 324}, 33.5);
  noisy(16, {300, 306, 298, 302, 304}, 33);
  const Analysis a = Analyze(rs, {});
  ASSERT_TRUE(a.recommendation.n_cpu_moe);
  EXPECT_GE(*a.recommendation.n_cpu_moe, 13);
  EXPECT_NE(*a.recommendation.n_cpu_moe, 12);
}

TEST(AnalysisTest, OutlierSampleDoesNotCreateACliff) {
  std::vector<RunResult> rs = Sweep({{14, {380, 32}}, {15, {370, 31}}, {16, {360, 30}}});
  RunResult odd = Result(13, true, 0);
  odd.samples_ts = {390, 392, 30, 388, 391};  // one stalled repetition
  rs.push_back(odd);
  rs.push_back(Result(13, false, 33));
  const Analysis a = Analyze(rs, {});
  EXPECT_TRUE(a.cliffs.empty());
  EXPECT_NE(a.shape, CurveShape::kCliff);
}

TEST(AnalysisTest, CollapseWithDepthRejectsThePlacement) {
  // At depth 0 N=12 looks best; at 32K its prefill collapses while N=14 keeps
  // the normal attention slowdown.
  auto rs = Sweep({{12, {400, 34}}, {13, {395, 33.5}}, {14, {390, 33}}, {16, {370, 32}}});
  auto deep = Sweep({{12, {60, 30}}, {13, {240, 30}}, {14, {250, 30}}, {16, {240, 29}}}, 32768);
  rs.insert(rs.end(), deep.begin(), deep.end());
  AnalysisOptions o;
  o.target_ctx = 32768;
  const Analysis a = Analyze(rs, o);
  ASSERT_EQ(a.curves.size(), 2u);
  const Rejection* n12 = a.RejectionOf(12);
  ASSERT_NE(n12, nullptr);
  EXPECT_EQ(n12->kind, RejectionKind::kCollapses);
  EXPECT_EQ(n12->depth, 32768);
  EXPECT_NEAR(n12->ratio, 60.0 / 400.0, 0.01);
  EXPECT_EQ(n12->reference_n, 16);  // the healthiest at depth: 240/370 against 250/390
  // N=13 is one layer safer than the collapsing N=12 and measured healthy at
  // the target context: the safety rule's layer is taken already.
  ASSERT_TRUE(a.recommendation.n_cpu_moe);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 13);
  EXPECT_EQ(a.recommendation.rule, RecommendationRule::kSafeNeighbour);
}

// The shape of issue "the safety rule steps back once": a fine sweep with a
// cliff between N=10 and N=11, the peak N=11 collapsing at the target depth,
// its neighbour N=12 healthy there and N=13 within the noise of N=12.
std::vector<RunResult> PeakCollapsesAtDepth() {
  auto rs = Sweep(
      {{10, {70, 27}}, {11, {400, 34}}, {12, {395, 33.8}}, {13, {390, 33.6}}, {14, {360, 32}}});
  auto deep = Sweep({{11, {60, 30}}, {12, {300, 31}}, {13, {296, 31}}}, 8192);
  rs.insert(rs.end(), deep.begin(), deep.end());
  return rs;
}

TEST(AnalysisTest, PeakCollapsingAtDepthLeavesItsHealthyNeighbour) {
  AnalysisOptions o;  // analyze: llama-bench output has no GPU headroom
  o.target_ctx = 8192;
  const Analysis a = Analyze(PeakCollapsesAtDepth(), o);
  ASSERT_NE(a.RejectionOf(11), nullptr);
  EXPECT_EQ(a.RejectionOf(11)->kind, RejectionKind::kCollapses);
  const Recommendation& r = a.recommendation;
  ASSERT_TRUE(r.n_cpu_moe);
  EXPECT_EQ(*r.n_cpu_moe, 12);  // not 13, which only ties with it
  EXPECT_TRUE(r.measured);
  EXPECT_EQ(r.rule, RecommendationRule::kSafeNeighbour);
  ASSERT_TRUE(r.stepped_from);
  EXPECT_EQ(r.stepped_from->n_cpu_moe, 11);
  EXPECT_EQ(r.stepped_from->depth, 8192);
  EXPECT_EQ(r.stepped_from->trouble, DepthTrouble::kCollapses);
  EXPECT_FALSE(r.proven_edge);  // nothing proven was stepped over
  // Without the target context nothing is proven there: the safety rule.
  o.target_ctx.reset();
  EXPECT_EQ(Analyze(PeakCollapsesAtDepth(), o).recommendation.rule,
            RecommendationRule::kSafetyRule);
}

TEST(AnalysisTest, PeakCollapsingAtDepthWithTunesInputs) {
  // Tune reads its placements through the same Analyze, with the plan's GPU
  // headroom for every N it measured (TuneLedger::AnalyzeNow): whether the plan
  // gives the neighbour headroom or not, the measurement at the target
  // context decides, and a tie does not pull the pick past it.
  for (int64_t neighbour_headroom : {int64_t{-200} << 20, int64_t{300} << 20}) {
    AnalysisOptions o;
    o.workload = Workload{"agent", 8192, 256};
    o.target_ctx = 8192;
    o.gpu_headroom = {{10, int64_t{-900} << 20},
                      {11, int64_t{-100} << 20},
                      {12, neighbour_headroom},
                      {13, int64_t{500} << 20},
                      {14, int64_t{900} << 20}};
    const Analysis a = Analyze(PeakCollapsesAtDepth(), o);
    ASSERT_TRUE(a.recommendation.n_cpu_moe) << neighbour_headroom;
    EXPECT_EQ(*a.recommendation.n_cpu_moe, 12) << neighbour_headroom;
    EXPECT_EQ(a.recommendation.rule, RecommendationRule::kSafeNeighbour) << neighbour_headroom;
  }
}

TEST(AnalysisTest, SteppingBackPastAProvenEdgeSaysWhatItCosts) {
  // The cliff is at depth 0 and nothing collapses at depth: the safety rule
  // steps back from N=11 although it was measured healthy at the target
  // context (llama-bench output has no headroom). The reading says what N=11
  // would give, and take_proven_edge takes it.
  auto rs = Sweep({{10, {70, 27}}, {11, {400, 34}}, {12, {380, 32}}, {13, {370, 31.5}}});
  auto deep = Sweep({{11, {300, 31}}, {12, {285, 29}}}, 8192);
  rs.insert(rs.end(), deep.begin(), deep.end());
  AnalysisOptions o;
  o.target_ctx = 8192;
  const Analysis a = Analyze(rs, o);
  const Recommendation& r = a.recommendation;
  EXPECT_EQ(r.rule, RecommendationRule::kSafetyRule);
  ASSERT_TRUE(r.n_cpu_moe);
  EXPECT_EQ(*r.n_cpu_moe, 12);
  ASSERT_TRUE(r.proven_edge);
  EXPECT_EQ(r.proven_edge->n_cpu_moe, 11);
  ASSERT_TRUE(r.proven_edge->gain);
  // Time to answer of the chat workload: 1024/pp + 384/tg.
  const double t11 = 1024.0 / 400 + 384.0 / 34, t12 = 1024.0 / 380 + 384.0 / 32;
  EXPECT_NEAR(*r.proven_edge->gain, t12 / t11 - 1, 0.01);
  o.take_proven_edge = true;
  const Recommendation taken = Analyze(rs, o).recommendation;
  ASSERT_TRUE(taken.n_cpu_moe);
  EXPECT_EQ(*taken.n_cpu_moe, 11);
  EXPECT_EQ(taken.rule, RecommendationRule::kEdgeProvenSafe);
  EXPECT_FALSE(taken.proven_edge);
  // A placement not measured at the target context is never taken as proven.
  o.target_ctx = 32768;
  EXPECT_EQ(*Analyze(rs, o).recommendation.n_cpu_moe, 12);
}

TEST(AnalysisTest, APickWithoutRoomGivesWayToOneProvenAtTheTargetContext) {
  // A cliff at depth 0 between N=10 and N=11; the safety rule's N=13 (tied
  // with the best N=11, one layer back from the edge) was not
  // measured at the target context and the plan leaves it no margin there,
  // while N=14 ran there healthy: tune takes N=14 and says which pick it
  // replaced. Without the headroom (analyze of files) the safety rule stands.
  auto rs = Sweep(
      {{10, {70, 27}}, {11, {400, 34}}, {12, {395, 33.8}}, {13, {390, 33.6}}, {14, {385, 33.4}}});
  auto deep = Sweep({{14, {330, 31}}}, 8192);
  rs.insert(rs.end(), deep.begin(), deep.end());
  AnalysisOptions o;
  o.target_ctx = 8192;
  EXPECT_EQ(Analyze(rs, o).recommendation.rule, RecommendationRule::kSafetyRule);
  o.gpu_headroom = {{10, int64_t{-4} << 30},
                    {11, int64_t{-3} << 30},
                    {12, int64_t{-2} << 30},
                    {13, int64_t{-1} << 30},
                    {14, int64_t{300} << 20}};
  const Recommendation r = Analyze(rs, o).recommendation;
  ASSERT_TRUE(r.n_cpu_moe);
  EXPECT_EQ(*r.n_cpu_moe, 14);
  EXPECT_EQ(r.rule, RecommendationRule::kProvenAtTarget);
  EXPECT_EQ(r.unproven_pick, 13);
  EXPECT_EQ(r.unproven_headroom, int64_t{-1} << 30);
  EXPECT_TRUE(r.measured);
  // With room at the target context for the pick, the safety rule stands.
  o.gpu_headroom[3].second = int64_t{100} << 20;
  EXPECT_EQ(Analyze(rs, o).recommendation.rule, RecommendationRule::kSafetyRule);
}

TEST(AnalysisTest, AttentionCostOfAFastPlacementIsNotACollapse) {
  // Everything on the GPU is several times faster than the CPU-bound
  // placements; at depth the same attention time per token is a larger share
  // of its time, so its ratio falls further. That is no collapse.
  auto rs = Sweep({{0, {15000, 220}}, {1, {7000, 200}}, {20, {900, 60}}, {40, {600, 40}}});
  auto deep = Sweep({{0, {8500, 200}}, {1, {5300, 185}}, {20, {880, 58}}, {40, {595, 39}}}, 7168);
  rs.insert(rs.end(), deep.begin(), deep.end());
  AnalysisOptions o;
  o.target_ctx = 8192;
  const Analysis a = Analyze(rs, o);
  for (const auto& c : a.depth_checks) EXPECT_FALSE(c.collapsed) << "N=" << c.n_cpu_moe;
  EXPECT_TRUE(a.rejected.empty()) << RejectionKindName(a.rejected.front().kind);
}

TEST(AnalysisTest, FailingAtDepthRejectsAndBoundsTheMoreAggressive) {
  // Strict mode: N=14 loads at depth 0 but not at the target context; N=12 and
  // N=13 were measured at depth 0 only: they hold more on the GPU than N=14.
  auto rs = Sweep({{12, {420, 35}}, {13, {410, 34}}, {14, {400, 34}}, {16, {380, 32}}});
  auto deep = Sweep({{16, {300, 30}}}, 15360);
  rs.insert(rs.end(), deep.begin(), deep.end());
  RunResult oom = Result(14, true, 0, 15360);
  oom.samples_ts.clear();
  oom.failure = EngineFailure{
      FailureKind::kOutOfMemoryDevice, "failed to allocate buffer for kv cache", "exit code 1", {}};
  rs.push_back(oom);
  AnalysisOptions o;
  o.target_ctx = 16384;
  const Analysis a = Analyze(rs, o);
  std::map<int, Rejection> why;
  for (const auto& r : a.rejected) why[r.n_cpu_moe] = r;
  ASSERT_TRUE(why.count(14));
  EXPECT_EQ(why[14].kind, RejectionKind::kFailsAtDepth);
  EXPECT_EQ(why[14].depth, 15360);
  EXPECT_NE(why[14].failure.find("kv cache"), std::string::npos) << why[14].failure;
  ASSERT_TRUE(why.count(12) && why.count(13));
  EXPECT_EQ(why[13].kind, RejectionKind::kInferredAtDepth);
  EXPECT_EQ(why[13].reference_n, 14);
  EXPECT_EQ(why[13].trouble, DepthTrouble::kFails);
  EXPECT_FALSE(why.count(16));
  ASSERT_TRUE(a.recommendation.n_cpu_moe);
  EXPECT_GE(*a.recommendation.n_cpu_moe, 16);
  // Beyond the target context a failure rejects nothing.
  o.target_ctx = 8192;
  EXPECT_TRUE(Analyze(rs, o).rejected.empty());
}

TEST(AnalysisTest, CollapseBeyondTheTargetContextDoesNotReject) {
  auto rs = Sweep({{12, {400, 34}}, {14, {390, 33}}});
  auto deep = Sweep({{12, {60, 30}}, {14, {250, 30}}}, 65536);
  rs.insert(rs.end(), deep.begin(), deep.end());
  AnalysisOptions o;
  o.target_ctx = 8192;
  const Analysis a = Analyze(rs, o);
  EXPECT_TRUE(a.rejected.empty());
  ASSERT_FALSE(a.depth_checks.empty());
  EXPECT_TRUE(std::any_of(a.depth_checks.begin(), a.depth_checks.end(),
                          [](const DepthCheck& c) { return c.collapsed; }));
}

TEST(AnalysisTest, EdgeProvenSafeWithHeadroomAndDeepMeasurement) {
  auto rs = Sweep({{12, {400, 34}}, {13, {380, 33}}, {14, {360, 32}}, {16, {340, 31}}});
  auto deep = Sweep({{12, {300, 30}}, {14, {270, 29}}}, 32768);
  rs.insert(rs.end(), deep.begin(), deep.end());
  AnalysisOptions o;
  o.target_ctx = 32768;
  o.gpu_headroom = {{12, int64_t{600} << 20}};
  const Analysis a = Analyze(rs, o);
  EXPECT_EQ(a.recommendation.rule, RecommendationRule::kEdgeProvenSafe);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 12);
  // Without the headroom the safety rule applies.
  o.gpu_headroom.clear();
  EXPECT_EQ(*Analyze(rs, o).recommendation.n_cpu_moe, 13);
}

TEST(AnalysisTest, FailedPlacementsAreDataAndRejected) {
  auto rs = Sweep({{14, {380, 32}}, {16, {360, 30}}});
  RunResult oom = Result(12, true, 0);
  oom.samples_ts.clear();
  oom.failure =
      EngineFailure{FailureKind::kOutOfMemoryDevice, "cudaMalloc failed", "exit code 1", {}};
  rs.push_back(oom);
  const Analysis a = Analyze(rs, {});
  ASSERT_FALSE(a.rejected.empty());
  EXPECT_EQ(a.rejected[0].n_cpu_moe, 12);
  EXPECT_EQ(a.rejected[0].kind, RejectionKind::kFailed);
  EXPECT_NE(a.rejected[0].failure.find("cudaMalloc"), std::string::npos);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 15);  // best 14 (edge), +1
}

TEST(AnalysisTest, ThreadsComparedWithIntervals) {
  std::vector<RunResult> rs = Sweep({{20, {300, 30}}, {22, {290, 29}}});
  // At N=20: 6 threads clearly best for decode; 8 and 14 tie with each other.
  for (auto [t, tg] : std::vector<std::pair<int, double>>{{6, 36}, {8, 30}, {14, 30.2}}) {
    rs.push_back(Result(20, true, 300, 0, t));
    rs.push_back(Result(20, false, tg, 0, t));
  }
  const Analysis a = Analyze(rs, {});
  ASSERT_TRUE(a.recommendation.threads);
  EXPECT_EQ(*a.recommendation.threads, 6);
  ASSERT_FALSE(a.comparisons.empty());
  EXPECT_EQ(a.comparisons[0].dimension, Dimension::kThreads);
}

TEST(AnalysisTest, ThreadTieGoesToFewerThreads) {
  std::vector<RunResult> rs;
  for (int t : {4, 8}) {
    rs.push_back(Result(20, true, 300, 0, t, 512, 0.04));
    rs.push_back(Result(20, false, 30 + (t == 8 ? 0.3 : 0), 0, t, 512, 0.04));
  }
  const Analysis a = Analyze(rs, {});
  ASSERT_TRUE(a.recommendation.threads);
  EXPECT_EQ(*a.recommendation.threads, 4);
}

// A result with the given repetitions.
RunResult WithSamples(int n, bool prefill, int depth, std::vector<double> samples) {
  RunResult r = Result(n, prefill, samples.front(), depth);
  r.samples_ts = std::move(samples);
  return r;
}

TEST(AnalysisTest, OneSlowRepetitionAtDepthIsNoCollapse) {
  // N=12 at depth: one repetition slowed by something else on the machine.
  // Its mean keeps 42% of its depth-0 speed (a collapse if read on means);
  // its best repetition keeps 74%, like N=14: the collapse rule reads best
  // repetitions.
  std::vector<RunResult> rs = Sweep({{12, {400, 34}}, {14, {390, 33}}});
  rs.push_back(WithSamples(12, true, 8192, {40, 300}));
  rs.push_back(Result(12, false, 30, 8192));
  rs.push_back(WithSamples(14, true, 8192, {290, 292}));
  rs.push_back(Result(14, false, 29, 8192));
  AnalysisOptions o;
  o.target_ctx = 8192 + 512;
  const Analysis a = Analyze(rs, o);
  ASSERT_EQ(a.depth_checks.size(), 2u);
  EXPECT_NEAR(a.depth_checks[0].ratio, 300.0 / 406, 0.005);  // N=12's best against its best
  for (const auto& c : a.depth_checks) EXPECT_FALSE(c.collapsed) << "N=" << c.n_cpu_moe;
  EXPECT_EQ(a.RejectionOf(12), nullptr);
}

TEST(AnalysisTest, ALoneFastRepetitionAtDepth0IsNotTheBest) {
  // N=12's depth-0 test has one repetition far above the others (a timing
  // artefact): read as its best, N=12 would keep 10% at depth and collapse.
  std::vector<RunResult> rs = Sweep({{14, {390, 33}}});
  rs.push_back(WithSamples(12, true, 0, {400, 402, 398, 3000}));
  rs.push_back(Result(12, false, 34, 0));
  rs.push_back(WithSamples(12, true, 8192, {300, 301}));
  rs.push_back(Result(12, false, 30, 8192));
  rs.push_back(WithSamples(14, true, 8192, {290, 292}));
  rs.push_back(Result(14, false, 29, 8192));
  AnalysisOptions o;
  o.target_ctx = 8192 + 512;
  const Analysis a = Analyze(rs, o);
  ASSERT_EQ(a.depth_checks.size(), 2u);
  EXPECT_NEAR(a.depth_checks[0].ratio, 301.0 / 402, 0.005);
  EXPECT_FALSE(a.depth_checks[0].collapsed);
  EXPECT_EQ(a.RejectionOf(12), nullptr);
}

TEST(AnalysisTest, MeanAndSdWithoutSamplesAreAccepted) {
  std::vector<RunResult> rs;
  for (auto [n, pp] : std::vector<std::pair<int, double>>{{10, 80}, {11, 400}, {12, 390}}) {
    RunResult r = Result(n, true, pp);
    r.samples_ts.clear();
    r.config.repetitions = 0;  // as loaded from llama-bench output without samples
    r.avg_ts = pp;
    r.stddev_ts = pp * 0.01;
    rs.push_back(r);
  }
  const Analysis a = Analyze(rs, {});
  EXPECT_EQ(a.shape, CurveShape::kCliff);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 12);
  EXPECT_FALSE(a.notes.empty());
}

TEST(AnalysisTest, DecodeOnlySweepsWorkAndSaySo) {
  std::vector<RunResult> rs;
  for (auto [n, tg] : std::vector<std::pair<int, double>>{{10, 20}, {12, 30}, {14, 28}}) {
    rs.push_back(Result(n, false, tg));
  }
  const Analysis a = Analyze(rs, {});
  EXPECT_FALSE(a.has_prefill);
  ASSERT_TRUE(a.recommendation.n_cpu_moe);
  EXPECT_EQ(*a.recommendation.n_cpu_moe, 13);
  EXPECT_TRUE(std::any_of(a.notes.begin(), a.notes.end(), [](const std::string& n) {
    return n.find("prefill") != std::string::npos;
  }));
}

TEST(AnalysisTest, WorkloadDecidesBetweenPrefillAndDecode) {
  // N=10 has better prefill, N=14 better decode: the workload decides.
  auto rs = Sweep({{10, {900, 20}}, {14, {300, 30}}});
  AnalysisOptions chat;
  chat.workload = *ParseWorkload("chat");
  AnalysisOptions agent;
  agent.workload = *ParseWorkload("agent");
  const Analysis a = Analyze(rs, chat);
  const Analysis b = Analyze(rs, agent);
  EXPECT_EQ(a.recommendation.edge, 14);
  EXPECT_EQ(b.recommendation.edge, 10);
}

}  // namespace
}  // namespace moetune
