#include "stats/summary.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(SummaryTest, MeanSdMedianMinMax) {
  const Summary s = Summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  ASSERT_TRUE(s.stddev.has_value());
  EXPECT_NEAR(*s.stddev, 2.138089935, 1e-9);  // sample sd (n-1)
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  // MAD = 0.5, so 9 has a modified z-score of 0.6745 * 4.5 / 0.5 = 6.1 > 3.5.
  EXPECT_DOUBLE_EQ(s.mad, 0.5);
  EXPECT_EQ(s.outliers, std::vector<std::size_t>{7});
}

TEST(BestRepetitionTest, TheFastestSampleCounts) {
  // Interference only slows a run down: the best repetition is the fastest.
  EXPECT_DOUBLE_EQ(BestRepetition({100, 97, 99, 103, 95}), 103);
  EXPECT_DOUBLE_EQ(Summarize({100, 97, 99, 103, 95}).best, 103);
}

TEST(BestRepetitionTest, ALoneOutlierRepetitionIsNotTheBest) {
  // One repetition far above the rest (a timing artefact seen on a shared VM).
  EXPECT_DOUBLE_EQ(BestRepetition({9.4, 1094.5, 680.6, 674.6, 663.4, 613.9}), 680.6);
  EXPECT_DOUBLE_EQ(Summarize({9.4, 1094.5, 680.6, 674.6, 663.4, 613.9}).best, 680.6);
  // Two lone ones in a row are both dropped; a top sample within 50% counts
  // (interference spreads honest repetitions widely on a busy machine).
  EXPECT_DOUBLE_EQ(BestRepetition({100, 101, 99, 160, 250}), 101);
  EXPECT_DOUBLE_EQ(BestRepetition({1.5, 6.4, 7.4, 10.2}), 10.2);
  // The ratio is the threshold: just above it is dropped, at it kept.
  EXPECT_DOUBLE_EQ(BestRepetition({80, 90, 100, 100 * kLoneOutlierRatio * 1.01}), 100);
  EXPECT_DOUBLE_EQ(BestRepetition({80, 90, 100, 100 * kLoneOutlierRatio}), 100 * kLoneOutlierRatio);
}

TEST(BestRepetitionTest, TwoDisturbedRepetitionsDoNotMakeTheBestALoneOutlier) {
  // Three repetitions, two of them slowed by something else on the machine:
  // the fast one is the machine (a simulated run that misread a whole curve
  // when it was dropped).
  EXPECT_DOUBLE_EQ(BestRepetition({995, 519, 646}), 995);
}

TEST(BestRepetitionTest, FewSamples) {
  // Two samples: the faster one (nothing to tell an artefact from).
  EXPECT_DOUBLE_EQ(BestRepetition({426.7, 709.8}), 709.8);
  EXPECT_DOUBLE_EQ(BestRepetition({5}), 5);
  EXPECT_DOUBLE_EQ(BestRepetition({}), 0);
  EXPECT_DOUBLE_EQ(Summarize({}).best, 0);
}

TEST(SummaryTest, SingleSampleHasNoStddev) {
  const Summary s = Summarize({42.5});
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.mean, 42.5);
  EXPECT_FALSE(s.stddev.has_value());
  EXPECT_FALSE(s.cv().has_value());
  EXPECT_EQ(FormatMeanSd(s), "42.50");
  ASSERT_EQ(SummaryWarnings(s, "tg128").size(), 1u);
}

TEST(SummaryTest, EmptyIsZero) {
  const Summary s = Summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_FALSE(s.stddev.has_value());
}

TEST(SummaryTest, OddMedian) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({10, 1, 3, 2}), 2.5);
}

TEST(SummaryTest, MadOutliers) {
  const Summary s = Summarize({100, 101, 99, 100, 102, 98, 100, 40});
  ASSERT_EQ(s.outliers.size(), 1u);
  EXPECT_EQ(s.outliers[0], 7u);
  EXPECT_DOUBLE_EQ(s.mad, 1.0);
  const auto w = SummaryWarnings(s, "pp512");
  bool found = false;
  for (const auto& x : w) found = found || x.find("outlier") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(SummaryTest, ConstantSeriesHasNoOutliers) {
  const Summary s = Summarize({5, 5, 5, 5});
  EXPECT_DOUBLE_EQ(*s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.mad, 0);
  EXPECT_TRUE(s.outliers.empty());
  EXPECT_EQ(FormatMeanSd(s, 1), "5.0 ± 0.0");
}

TEST(SummaryTest, SpreadOfASpeedNeverReachesBelowZero) {
  // Two repetitions far apart: mean 12, sd about 15.6. "12.0 ± 15.6" would
  // say the speed may be negative; the range is clipped at 0 instead.
  const Summary s = Summarize({1, 23});
  ASSERT_TRUE(s.stddev.has_value());
  ASSERT_LT(s.mean - *s.stddev, 0);
  EXPECT_EQ(FormatMeanSd(s, 1), "12.0 (0.0-27.6)");
  EXPECT_EQ(FormatMeanSd(s, 1).find('-', 0), FormatMeanSd(s, 1).find("-27.6"));
  EXPECT_EQ(FormatNonNegativeRange(-3.04, 27.0), "0.0-27.0");
  EXPECT_EQ(FormatNonNegativeRange(630.14, 645.3), "630.1-645.3");
  // A narrow spread keeps llama-bench's form.
  EXPECT_EQ(FormatMeanSd(Summarize({10, 12}), 2), "11.00 ± 1.41");
}

TEST(SummaryTest, HighVarianceWarns) {
  const Summary s = Summarize({10, 20, 30});
  bool found = false;
  for (const auto& x : SummaryWarnings(s, "tg"))
    found = found || x.find("variance") != std::string::npos;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace moetune
