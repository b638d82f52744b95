#include "tune/rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace moetune {
namespace {

Estimate E(double mean, double sd, int n) { return Estimate{mean, sd, n}; }

TEST(TieRule, OverlappingIntervalsAreATie) {
  const CurveRules rules;
  // 3% apart with a 5% spread over 3 repetitions: the noise cannot tell.
  EXPECT_EQ(CompareEstimates(E(103, 5, 3), E(100, 5, 3), rules), 0);
  // The same difference with tight intervals is a difference.
  EXPECT_EQ(CompareEstimates(E(103, 0.5, 5), E(100, 0.5, 5), rules), 1);
  EXPECT_EQ(CompareEstimates(E(100, 0.5, 5), E(103, 0.5, 5), rules), -1);
  // Under min_relative (2%) it is a tie whatever the statistics say.
  EXPECT_EQ(CompareEstimates(E(101, 0.01, 9), E(100, 0.01, 9), rules), 0);
  // Without a spread nothing can be told apart.
  EXPECT_EQ(CompareEstimates(Estimate{150, std::nullopt, 1}, E(100, 0.5, 5), rules), 0);
}

TEST(TieRule, ChooseGivesATieToTheEarliest) {
  // Candidates in order of preference: the best is the second, the first is
  // tied with it, the third is worse.
  const Choice c = Choose({E(100, 4, 3), E(102, 4, 3), E(60, 1, 3)}, CurveRules{});
  ASSERT_TRUE(c.best && c.chosen);
  EXPECT_EQ(*c.best, 1u);
  EXPECT_EQ(*c.chosen, 0u);
  EXPECT_EQ(c.standings,
            (std::vector<Standing>{Standing::kTied, Standing::kBest, Standing::kWorse}));
  EXPECT_FALSE(c.clear());
}

TEST(TieRule, SeparatedIntervalsAreNoTie) {
  // The same means as above, measured tightly: the second stands alone.
  const Choice c = Choose({E(100, 0.3, 9), E(104, 0.3, 9), E(60, 1, 3)}, CurveRules{});
  ASSERT_TRUE(c.chosen);
  EXPECT_EQ(*c.chosen, 1u);
  EXPECT_EQ(c.standings[0], Standing::kWorse);
  EXPECT_TRUE(c.clear());
}

TEST(TieRule, UnmeasuredCandidatesAreNeitherBestNorTied) {
  const Choice none = Choose({std::nullopt, std::nullopt}, CurveRules{});
  EXPECT_FALSE(none.best);
  EXPECT_FALSE(none.chosen);
  const Choice c = Choose({std::nullopt, E(50, 1, 3)}, CurveRules{});
  EXPECT_EQ(c.standings[0], Standing::kUnmeasured);
  EXPECT_EQ(*c.chosen, 1u);
  // Equal means: the earliest is the best.
  EXPECT_EQ(*Choose({E(50, 1, 3), E(50, 1, 3)}, CurveRules{}).best, 0u);
}

// The case of issue 17 item 3: on a busy machine "-t 1: decode 54.7 t/s (n=2)
// best; -t 2: decode 1.1 t/s (n=2) tie". Two repetitions each, spread from
// 9.4 to 100 and from 0.1 to 2.1 t/s: Welch cannot separate them, but that is
// no tie: the intervals say nothing.
TEST(TieRule, TwoSamplesFiftyTimesApartAreUndecidedNotATie) {
  const CurveRules rules;
  const auto sd2 = [](double a, double b) { return std::abs(a - b) / std::sqrt(2.0); };
  const Estimate t1{54.7, sd2(100, 9.4), 2}, t2{1.1, sd2(0.1, 2.1), 2};
  EXPECT_EQ(CompareEstimates(t2, t1, rules), 0);  // the test alone cannot separate them
  EXPECT_TRUE(TooWideToTell(t1, rules));
  EXPECT_TRUE(TooWideToTell(t2, rules));
  const Choice c = Choose({t1, t2}, rules);
  ASSERT_TRUE(c.best);
  EXPECT_EQ(*c.best, 0u);
  EXPECT_EQ(c.standings, (std::vector<Standing>{Standing::kBest, Standing::kUndecided}));
  EXPECT_TRUE(c.undecided());
  EXPECT_FALSE(c.clear());
  // A wide best against a candidate it separates from is decided: worse.
  const Choice far = Choose({Estimate{54.7, 20, 9}, Estimate{1.1, 0.05, 9}}, rules);
  EXPECT_EQ(far.standings[1], Standing::kWorse);
  EXPECT_FALSE(far.undecided());
}

TEST(TieRule, ANarrowOverlapIsStillATie) {
  const CurveRules rules;
  // 1% apart, +-2.5% intervals over three repetitions: a real tie.
  const Choice c = Choose({E(100, 1, 3), E(101, 1, 3)}, rules);
  EXPECT_EQ(c.standings, (std::vector<Standing>{Standing::kTied, Standing::kBest}));
  EXPECT_FALSE(c.undecided());
  // The threshold: an interval reaching just past undecided_width of the mean.
  CurveRules wide = rules;
  wide.undecided_width = 0.02;
  EXPECT_EQ(Choose({E(100, 1, 3), E(101, 1, 3)}, wide).standings[0], Standing::kUndecided);
  // Without a spread (one repetition) nothing is too wide: the tie rule's own
  // "no spread, no difference" holds.
  EXPECT_FALSE(TooWideToTell(Estimate{100, std::nullopt, 1}, rules));
}

TEST(TieRule, StandingNamesRoundTrip) {
  for (Standing s : {Standing::kBest, Standing::kTied, Standing::kWorse, Standing::kUnmeasured,
                     Standing::kUndecided})
    EXPECT_EQ(StandingFromName(StandingName(s)), s);
  EXPECT_EQ(StandingName(Standing::kUndecided), std::string("undecided"));
  EXPECT_FALSE(StandingFromName("better"));
}

TEST(CollapseRule, ASpillCollapsesAttentionDoesNot) {
  const CollapseRules rules;
  const DepthSpeeds healthy{400, 300};  // keeps 75%
  // A spill: keeps 15%, depth adds 14 ms per token against 0.8 ms.
  EXPECT_TRUE(Collapses({400, 60}, healthy, rules));
  // Keeps 45% (under 0.7 x 75%), but depth adds 1.2 ms per token, under 3x
  // the reference's 0.8 ms: a faster placement paying the same attention cost.
  EXPECT_FALSE(Collapses({1000, 450}, healthy, rules));
  // Unmeasured speeds decide nothing.
  EXPECT_FALSE(Collapses({0, 60}, healthy, rules));
  EXPECT_FALSE(Collapses({400, 60}, {400, 0}, rules));
}

TEST(CollapseRule, TheThresholdIsTheRatioToTheReference) {
  CollapseRules rules;
  const DepthSpeeds reference{400, 400};                  // no slowdown at all
  EXPECT_FALSE(Collapses({400, 300}, reference, rules));  // 75% of the reference's ratio
  EXPECT_TRUE(Collapses({400, 260}, reference, rules));   // 65%
  rules.ratio = 0.6;
  EXPECT_FALSE(Collapses({400, 260}, reference, rules));
}

TEST(CollapseRule, TheReferenceIsTheHealthiestOfComparableSpeed) {
  const CollapseRules rules;
  // Placement 0 is judged; 1 is healthier but too slow to compare with (under
  // a third of its depth-0 speed); 2 is comparable.
  const std::vector<DepthSpeeds> ps = {{900, 300}, {200, 190}, {600, 450}};
  EXPECT_EQ(CollapseReference(ps, 0, rules), 2u);
  // For the slow one itself every placement is fast enough to compare with.
  EXPECT_EQ(CollapseReference(ps, 1, rules), 1u);
}

}  // namespace
}  // namespace moetune
