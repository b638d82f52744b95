#include "hw/bandwidth.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

TEST(BandwidthBufferBytes, FarLargerThanCacheButBounded) {
  EXPECT_EQ(BandwidthBufferBytes(32 * kMiB, 64LL << 30), 256 * kMiB);    // 8 x 32 MiB
  EXPECT_EQ(BandwidthBufferBytes(96 * kMiB, 64LL << 30), 768 * kMiB);    // 8 x 96 MiB
  EXPECT_EQ(BandwidthBufferBytes(200 * kMiB, 64LL << 30), 1024 * kMiB);  // capped
  EXPECT_EQ(BandwidthBufferBytes(480 * kMiB, 64LL << 30), 1024 * kMiB);  // VM with host L3: capped
  EXPECT_EQ(BandwidthBufferBytes(0, 0), 256 * kMiB);
  EXPECT_EQ(BandwidthBufferBytes(96 * kMiB, 1LL << 30), 256 * kMiB);  // a quarter of RAM
  EXPECT_EQ(BandwidthBufferBytes(96 * kMiB, 100 * kMiB), 64 * kMiB);  // floor
}

TEST(MeasureReadBandwidth, SmallBufferGivesPlausibleRate) {
  BandwidthOptions o;
  o.cpus = {0};
  o.buffer_bytes = 64 * kMiB;
  o.max_passes = 4;
  o.time_budget_s = 0.2;
  auto r = MeasureReadBandwidth(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->threads, 1);
  EXPECT_EQ(r->buffer_bytes, 64 * kMiB);
  EXPECT_GE(r->pass_gbps.size(), 3u);
  // Any machine that runs the tests reads faster than 0.5 GB/s and slower than 10 TB/s.
  EXPECT_GT(r->read_gbps, 0.5);
  EXPECT_LT(r->read_gbps, 10000.0);
  EXPECT_GE(r->read_gbps, r->median_gbps);
}

}  // namespace
}  // namespace moetune
