#include "watch/resources.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr int64_t kMiB = 1 << 20;

FaultSample Busy(double t, int64_t faults, int64_t rss, int64_t growth) {
  FaultSample s;
  s.time_s = t;
  s.interval_s = 5;
  s.busy = true;
  s.major_faults = faults;
  s.rss_bytes = rss;
  s.rss_growth_bytes = growth;
  return s;
}

TEST(PageFaultTest, WarmUpWithGrowingRssIsNotThrashing) {
  PageFaultDetector d;
  for (int i = 0; i < 10; ++i) {
    d.Add(Busy(i * 5, 20000, (1000 + 500 * i) * kMiB, 500 * kMiB));  // the model pages in
    EXPECT_FALSE(d.active());
  }
}

TEST(PageFaultTest, FaultsUnderLoadWithFlatRssRaiseAndClear) {
  PageFaultDetector d;
  FaultSample idle;
  idle.major_faults = 50000;  // idle samples say nothing
  d.Add(Busy(0, 5000, 20000 * kMiB, 0));
  d.Add(idle);
  d.Add(Busy(10, 8000, 20000 * kMiB, 10 * kMiB));
  EXPECT_FALSE(d.active());
  d.Add(Busy(15, 6000, 20000 * kMiB, -5 * kMiB));
  EXPECT_TRUE(d.raised_now());
  EXPECT_EQ(d.evidence().size(), 3u);
  for (int i = 0; i < 2; ++i) d.Add(Busy(20 + i, 2, 20000 * kMiB, 0));
  EXPECT_TRUE(d.active());
  d.Add(Busy(30, 0, 20000 * kMiB, 0));
  EXPECT_TRUE(d.cleared_now());
}

TEST(PageFaultTest, AFewFaultsOrOneBurstAreNothing) {
  PageFaultDetector d;
  d.Add(Busy(0, 50, 1000 * kMiB, 0));  // under 100
  d.Add(Busy(5, 90000, 1000 * kMiB, 0));
  d.Add(Busy(10, 0, 1000 * kMiB, 0));  // calm again: the run restarts
  d.Add(Busy(15, 90000, 1000 * kMiB, 0));
  d.Add(Busy(20, 90000, 1000 * kMiB, 0));
  EXPECT_FALSE(d.active());
}

GpuInfo Gpu(int64_t free_bytes, std::vector<GpuProcess> procs, bool known = true) {
  GpuInfo g;
  g.index = 0;
  g.name = "RTX 4090";
  g.total_bytes = 24576 * kMiB;
  g.free_bytes = free_bytes;
  g.processes = std::move(procs);
  g.processes_known = known;
  return g;
}

TEST(GpuMemoryTest, ANewProgramIsNamed) {
  GpuMemoryDetector d;
  const std::set<uint32_t> own = {100};
  d.Add({Gpu(2000 * kMiB, {{100, "llama-server", 20000 * kMiB}, {5, "Xorg", 300 * kMiB}})}, own);
  EXPECT_TRUE(d.has_reference());
  const GpuInfo taken = Gpu(200 * kMiB, {{100, "llama-server", 20000 * kMiB},
                                         {5, "Xorg", 300 * kMiB},
                                         {777, "chrome", 1800 * kMiB},
                                         {778, "tiny", 10 * kMiB}});
  d.Add({taken}, own);
  EXPECT_FALSE(d.active());  // two scans in a row
  d.Add({taken}, own);
  ASSERT_TRUE(d.raised_now());
  ASSERT_EQ(d.intruders().size(), 1u);
  EXPECT_EQ(d.intruders()[0].name, "chrome");
  EXPECT_EQ(d.intruders()[0].pid, 777u);
  EXPECT_EQ(d.intruders()[0].bytes, 1800 * kMiB);
  const GpuInfo gone = Gpu(2000 * kMiB, {{100, "llama-server", 20000 * kMiB}});
  d.Add({gone}, own);
  d.Add({gone}, own);
  EXPECT_TRUE(d.cleared_now());
}

TEST(GpuMemoryTest, WithoutAProcessListAFreeMemoryDropCounts) {
  GpuMemoryDetector d;
  d.Add({Gpu(3000 * kMiB, {}, false)}, {});
  d.Add({Gpu(2800 * kMiB, {}, false)}, {});  // 200 MiB: noise
  d.Add({Gpu(2800 * kMiB, {}, false)}, {});
  EXPECT_FALSE(d.active());
  d.Add({Gpu(1000 * kMiB, {}, false)}, {});
  d.Add({Gpu(1000 * kMiB, {}, false)}, {});
  ASSERT_TRUE(d.active());
  EXPECT_FALSE(d.intruders()[0].pid.has_value());
  EXPECT_EQ(d.intruders()[0].bytes, 2000 * kMiB);
}

TEST(GpuMemoryTest, TheServerGrowingIsNotAnIntruder) {
  GpuMemoryDetector d;
  const std::set<uint32_t> own = {100, 101};
  d.Add({Gpu(4000 * kMiB, {{100, "llama-server", 10000 * kMiB}})}, own);
  for (int i = 0; i < 3; ++i) {
    d.Add({Gpu(1000 * kMiB, {{100, "llama-server", 12000 * kMiB}, {101, "helper", 900 * kMiB}})},
          own);
  }
  EXPECT_FALSE(d.active());
}

}  // namespace
}  // namespace moetune
