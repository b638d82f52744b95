#include "speed/cpu_threads.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

CpuSpec Hybrid() {
  CpuSpec c;
  c.p_cores = 6;
  c.e_cores = 8;
  c.smt = 2;
  c.e_core_relative = 0.4;
  return c;
}

TEST(ThreadScaling, FillsPerformanceCoresThenEfficiencyCoresThenSiblings) {
  const CalibrationConstants k;
  const ThreadScaling six = ScaleThreads(Hybrid(), 6, k);
  EXPECT_EQ(six.on_p_cores, 6);
  EXPECT_EQ(six.on_e_cores, 0);
  const ThreadScaling fourteen = ScaleThreads(Hybrid(), 14, k);
  EXPECT_EQ(fourteen.on_e_cores, 8);
  EXPECT_EQ(fourteen.smt_siblings, 0);
  const ThreadScaling twenty = ScaleThreads(Hybrid(), 20, k);
  EXPECT_EQ(twenty.smt_siblings, 6);
  EXPECT_EQ(twenty.oversubscribed, 0);
  EXPECT_EQ(ScaleThreads(Hybrid(), 24, k).oversubscribed, 4);
  // Matmuls (prefill) gain from E-cores; barrier-bound decode gains less.
  EXPECT_GT(fourteen.prefill, six.prefill);
  EXPECT_LT(fourteen.decode / six.decode, fourteen.prefill / six.prefill);
}

TEST(ThreadScaling, VarianceGrowsWhenThreadsShareACoreOrOversubscribe) {
  const CalibrationConstants k;
  const double alone = ScaleThreads(Hybrid(), 6, k).noise_cv;
  const double siblings = ScaleThreads(Hybrid(), 20, k).noise_cv;
  const double over = ScaleThreads(Hybrid(), 28, k).noise_cv;
  EXPECT_GT(siblings, alone);
  EXPECT_GT(over, siblings);
  // Oversubscribed threads hold every barrier: slower than fitting the CPUs.
  EXPECT_LT(ScaleThreads(Hybrid(), 40, k).decode, ScaleThreads(Hybrid(), 20, k).decode);
}

TEST(ThreadScaling, QuotaCapsAndNegativeEfficiencyMakesMoreThreadsSlower) {
  CpuSpec c;
  c.p_cores = 8;
  const CalibrationConstants k;
  CpuSpec limited = c;
  limited.quota = 2.0;
  EXPECT_LT(ScaleThreads(limited, 8, k).prefill, ScaleThreads(c, 8, k).prefill);
  CalibrationConstants loaded;
  loaded.thread_efficiency_prefill = -0.5;
  EXPECT_LT(ScaleThreads(c, 2, loaded).prefill, ScaleThreads(c, 1, loaded).prefill);
  EXPECT_DOUBLE_EQ(ScaleThreads(c, 1, loaded).prefill, 1.0);
}

}  // namespace
}  // namespace moetune
