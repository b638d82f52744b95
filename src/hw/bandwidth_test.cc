#include "hw/bandwidth.h"

#include <gtest/gtest.h>
#include <sched.h>

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

TEST(MeasureReadBandwidth, CallersAffinityIsLeftAsItWas) {
  // The measurement pinned the calling thread and never restored it: every
  // process started afterwards (doctor's llama-bench) ran on one CPU.
  cpu_set_t before;
  CPU_ZERO(&before);
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  BandwidthOptions o;
  o.cpus = {0};
  o.buffer_bytes = 16 * kMiB;
  o.max_passes = 3;
  o.time_budget_s = 0.05;
  ASSERT_TRUE(MeasureReadBandwidth(o).ok());
  cpu_set_t after;
  CPU_ZERO(&after);
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after))
      << CPU_COUNT(&before) << " CPUs before, " << CPU_COUNT(&after) << " after";
}

TEST(MeasureReadBandwidth, UsesTheWidestLoadsTheCpuHas) {
  BandwidthOptions o;
  o.buffer_bytes = 16 * kMiB;
  o.max_passes = 3;
  o.time_budget_s = 0.05;
  auto r = MeasureReadBandwidth(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kernel, BandwidthKernelName() + ", 4 streams per thread");
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    EXPECT_NE(BandwidthKernelName(), "sse2");
  }
#endif
}

}  // namespace
}  // namespace moetune
