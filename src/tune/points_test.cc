#include "tune/points.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

RunResult Samples(bool prefill, std::vector<double> samples) {
  RunResult r;
  (prefill ? r.config.n_prompt : r.config.n_gen) = prefill ? 512 : 64;
  r.config.repetitions = static_cast<int>(samples.size());
  r.avg_ts = samples.empty() ? 0 : samples.front();
  r.samples_ts = std::move(samples);
  return r;
}

TEST(Points, RepeatedRunsArePooledAndReadByTheBestRepetitionRule) {
  // Two runs of one test (a first measurement and more repetitions): one pool.
  const RunResult a = Samples(true, {100, 102});
  const RunResult b = Samples(true, {101, 250});  // 250 stands alone: an artefact
  const auto s = PoolResults({&a, &b});
  ASSERT_TRUE(s);
  EXPECT_EQ(s->n, 4u);
  EXPECT_DOUBLE_EQ(s->best, 102);
  EXPECT_DOUBLE_EQ(s->max, 250);
}

TEST(Points, FailedRunsAreLeftOutAndAFailedCellIsAFailedPoint) {
  RunResult failed = Samples(true, {});
  failed.failure = EngineFailure{FailureKind::kOutOfMemoryDevice, "cudaMalloc failed", "", {}};
  const RunResult ok = Samples(false, {30, 31});
  Cell cell{{&failed}, {}};
  const auto p = PointOf(7, cell, Workload{"chat", 1024, 384});
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->failed());
  EXPECT_NE(p->failure.find("cudaMalloc failed"), std::string::npos);
  EXPECT_FALSE(p->objective);
  cell.decode.push_back(&ok);
  const auto q = PointOf(7, cell, Workload{"chat", 1024, 384});
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->failed());
  EXPECT_FALSE(q->prefill);
  ASSERT_TRUE(q->objective);  // decode alone: its estimate
  EXPECT_DOUBLE_EQ(q->objective->mean, 30.5);
  EXPECT_FALSE(PointOf(7, Cell{}, Workload{"chat", 1024, 384}));
}

TEST(Points, TheObjectiveIsRequestsPerSecondOfTheWorkload) {
  Summary pp, tg;
  pp.n = tg.n = 3;
  pp.mean = 1000;
  tg.mean = 20;
  pp.stddev = 10.0;
  tg.stddev = 0.2;
  const auto e = WorkloadObjective(pp, tg, Workload{"chat", 1000, 100});
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->mean, 1.0 / (1000.0 / 1000 + 100.0 / 20));
  EXPECT_EQ(e->n, 3);
  ASSERT_TRUE(e->sd);
  EXPECT_GT(*e->sd, 0);
}

}  // namespace
}  // namespace moetune
