#include "speed/kv_cache_reads.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

TEST(KvCacheReadsTest, ZeroLlcReadsEverythingFromRam) {
  const KvReadSplit s = SplitKvReads(16 * kMiB, 10 * kMiB, 0);
  EXPECT_DOUBLE_EQ(s.from_llc, 0);
  EXPECT_DOUBLE_EQ(s.from_ram, 16 * kMiB);
  // Then the time is the plain bandwidth model, whatever the LLC factor.
  EXPECT_DOUBLE_EQ(KvReadSeconds(s, 10e9, 4.0), 16 * kMiB / 10e9);
}

TEST(KvCacheReadsTest, FitsInsideTheLlcBesideTheWeights) {
  const KvReadSplit s = SplitKvReads(8 * kMiB, 10 * kMiB, 32 * kMiB);
  EXPECT_DOUBLE_EQ(s.from_llc, 8 * kMiB);
  EXPECT_DOUBLE_EQ(s.from_ram, 0);
  EXPECT_DOUBLE_EQ(KvReadSeconds(s, 10e9, 4.0), 8 * kMiB / 40e9);
}

TEST(KvCacheReadsTest, OnlyTheExcessComesFromRam) {
  // 32 MiB LLC, 10 MiB of weights: 22 MiB of room for a 40 MiB cache.
  const KvReadSplit s = SplitKvReads(40 * kMiB, 10 * kMiB, 32 * kMiB);
  EXPECT_DOUBLE_EQ(s.from_llc, 22 * kMiB);
  EXPECT_DOUBLE_EQ(s.from_ram, 18 * kMiB);
  // Weights larger than the LLC leave no room at all.
  EXPECT_DOUBLE_EQ(SplitKvReads(40 * kMiB, 64 * kMiB, 32 * kMiB).from_ram, 40 * kMiB);
}

TEST(KvCacheReadsTest, ContinuousAtTheBoundary) {
  const double llc = 32 * kMiB, w = 10 * kMiB, edge = llc - w;
  const double eps = 1.0;
  const double below = KvReadSeconds(SplitKvReads(edge - eps, w, llc), 10e9, 4.0);
  const double at = KvReadSeconds(SplitKvReads(edge, w, llc), 10e9, 4.0);
  const double above = KvReadSeconds(SplitKvReads(edge + eps, w, llc), 10e9, 4.0);
  EXPECT_LT(below, at);
  EXPECT_LT(at, above);
  // No jump: the two steps of one byte cost one LLC byte and one RAM byte.
  EXPECT_NEAR(above - below, eps / 40e9 + eps / 10e9, 1e-18);
}

TEST(KvCacheReadsTest, TimeIsMonotoneInDepthAndSteeperBeyondTheLlc) {
  const double llc = 32 * kMiB, w = 10 * kMiB, per_cell = 4096;
  double prev = -1, slope_in = 0, slope_out = 0;
  for (int cells = 0; cells <= 16384; cells += 1024) {
    const double t = KvReadSeconds(SplitKvReads(cells * per_cell, w, llc), 10e9, 4.0);
    EXPECT_GT(t, prev) << cells;
    if (cells == 1024) slope_in = t - prev;
    if (cells == 16384) slope_out = t - prev;
    prev = t;
  }
  EXPECT_NEAR(slope_out / slope_in, 4.0, 1e-9);  // RAM is llc_factor times slower
}

TEST(KvCacheReadsTest, NegativeInputsCountAsZero) {
  const KvReadSplit s = SplitKvReads(-5, -5, -5);
  EXPECT_DOUBLE_EQ(s.from_llc, 0);
  EXPECT_DOUBLE_EQ(s.from_ram, 0);
  EXPECT_DOUBLE_EQ(KvReadSeconds(s, 0, 0), 0);
}

}  // namespace
}  // namespace moetune
