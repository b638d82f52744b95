#include "stats/interval.h"

#include <gtest/gtest.h>

#include <cmath>

namespace moetune {
namespace {

TEST(IntervalTest, StudentTQuantilesMatchTables) {
  // Two-sided 95% critical values (any statistics table).
  EXPECT_NEAR(StudentTQuantile(0.95, 1), 12.706, 0.01);
  EXPECT_NEAR(StudentTQuantile(0.95, 2), 4.303, 0.005);
  EXPECT_NEAR(StudentTQuantile(0.95, 4), 2.776, 0.01);
  EXPECT_NEAR(StudentTQuantile(0.95, 9), 2.262, 0.005);
  EXPECT_NEAR(StudentTQuantile(0.95, 29), 2.045, 0.003);
  EXPECT_NEAR(StudentTQuantile(0.95, 1e9), 1.960, 0.002);
  EXPECT_NEAR(StudentTQuantile(0.99, 9), 3.250, 0.01);
}

TEST(IntervalTest, MeanIntervalWidthShrinksWithSamples) {
  const Interval few = MeanInterval(100, 5.0, 3);
  const Interval many = MeanInterval(100, 5.0, 30);
  EXPECT_TRUE(few.has_spread);
  EXPECT_LT(many.high - many.low, few.high - few.low);
  EXPECT_NEAR(few.high - 100, 4.303 * 5 / std::sqrt(3.0), 0.05);
  const Interval one = MeanInterval(100, std::nullopt, 1);
  EXPECT_FALSE(one.has_spread);
  EXPECT_EQ(one.low, 100);
}

TEST(IntervalTest, CompareSeparatesClearDifferencesAndTiesNoise) {
  const Summary a = Summarize({100, 101, 99, 100, 100});
  const Summary b = Summarize({90, 91, 89, 90, 90});
  const Summary c = Summarize({99, 104, 95, 101, 98});
  EXPECT_EQ(CompareMeans(a, b), Comparison::kGreater);
  EXPECT_EQ(CompareMeans(b, a), Comparison::kLess);
  EXPECT_EQ(CompareMeans(a, c), Comparison::kTie);
  // A difference below the practical threshold is a tie even with tiny noise.
  const Summary d = Summarize({100.5, 100.5, 100.5, 100.6, 100.4});
  const Summary e = Summarize({100.0, 100.0, 100.0, 100.1, 99.9});
  EXPECT_EQ(CompareMeans(d, e), Comparison::kTie);
  EXPECT_EQ(CompareMeans(d, e, 0.95, 0.0), Comparison::kGreater);
  // Unknown spread: no claim.
  EXPECT_EQ(CompareMeans(120, std::nullopt, 1, 100, 1.0, 5), Comparison::kTie);
}

}  // namespace
}  // namespace moetune
