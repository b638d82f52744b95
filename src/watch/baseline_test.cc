#include "watch/baseline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tune/tune_reader.h"
#include "watch/trace_test_util.h"

namespace moetune {
namespace {

TEST(BaselineTest, TimePerTokenIsInterpolatedAndExtrapolated) {
  PerTokenCurve c;
  c.Add(0, 1000);     // 1 ms per token
  c.Add(10000, 500);  // 2 ms per token
  EXPECT_DOUBLE_EQ(*c.TokensPerSecond(0), 1000);
  EXPECT_DOUBLE_EQ(*c.TokensPerSecond(5000), 1.0 / 0.0015);
  EXPECT_DOUBLE_EQ(*c.TokensPerSecond(20000), 1.0 / 0.003);  // the last slope goes on
  EXPECT_DOUBLE_EQ(*c.TokensPerSecond(-5), 1000);
  PerTokenCurve faster_deep;  // measured noise: deeper looks faster
  faster_deep.Add(0, 500);
  faster_deep.Add(1000, 1000);
  EXPECT_DOUBLE_EQ(*faster_deep.TokensPerSecond(50000), 1000);  // never extrapolated faster
  PerTokenCurve empty;
  EXPECT_FALSE(empty.TokensPerSecond(0).has_value());
  empty.Add(0, -3);
  EXPECT_TRUE(empty.empty());
}

// An analysis as tune/tune_reader.h reads it from moetune's JSON.
Analysis Read(const nlohmann::json& j) {
  auto a = AnalysisFromJson(j);
  EXPECT_TRUE(a.ok()) << a.error().message();
  return a.ok() ? *a : Analysis{};
}

Analysis RealAnalysis() {
  std::ifstream f(testing::WatchFixture("tiny16k-analysis.json"));
  std::stringstream ss;
  ss << f.rdbuf();
  return Read(nlohmann::json::parse(ss.str()));
}

TEST(BaselineTest, FromARealAnalysis) {
  // moetune analyze --json of llama-bench -d 0,2048,4096 on the tiny model here.
  std::vector<std::string> notes;
  auto b = BaselineFromAnalysis(RealAnalysis(), 0, "a.json", &notes);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ((*b)->n_cpu_moe, 0);
  EXPECT_EQ((*b)->Kind(), "measured");
  EXPECT_NE((*b)->Describe().find("0, 2048, 4096"), std::string::npos);
  const auto e0 = (*b)->At(0);
  const auto e4 = (*b)->At(4096);
  ASSERT_TRUE(e0.prefill_tps && e0.decode_tps && e4.prefill_tps && e4.decode_tps);
  EXPECT_GT(*e0.prefill_tps, *e4.prefill_tps);
  EXPECT_GT(*e0.decode_tps, *e4.decode_tps);
}

TEST(BaselineTest, NearestConservativeNWhenTheConfiguredOneWasNotMeasured) {
  const Analysis a = Read({{"curves",
                            {{{"depth", 0},
                              {"points",
                               {{{"n_cpu_moe", 10},
                                 {"prefill_tps", {{"mean", 100.0}}},
                                 {"decode_tps", {{"mean", 10.0}}}},
                                {{"n_cpu_moe", 14},
                                 {"prefill_tps", {{"mean", 90.0}}},
                                 {"decode_tps", {{"mean", 9.0}}}}}}}}},
                           {"recommendation", {{"n_cpu_moe", 14}}}});
  std::vector<std::string> notes;
  auto b = BaselineFromAnalysis(a, 12, "t.json", &notes);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->n_cpu_moe, 14);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("more conservative"), std::string::npos);
  EXPECT_DOUBLE_EQ(*(*b)->At(0).decode_tps, 9.0);
  auto rec = BaselineFromAnalysis(a, std::nullopt, "t.json", nullptr);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ((*rec)->n_cpu_moe, 14);  // the recommendation
  auto beyond = BaselineFromAnalysis(a, 20, "t.json", nullptr);
  ASSERT_TRUE(beyond.ok());
  EXPECT_EQ((*beyond)->n_cpu_moe, 14);
}

TEST(BaselineTest, UnusableAnalysesAreErrors) {
  EXPECT_FALSE(BaselineFromAnalysis(Analysis{}, 0, "x", nullptr).ok());
  // A point with no speed, and one whose speed is not positive.
  EXPECT_FALSE(
      BaselineFromAnalysis(Read({{"curves", {{{"depth", 0}, {"points", {{{"n_cpu_moe", 1}}}}}}}}),
                           0, "x", nullptr)
          .ok());
  Analysis negative;
  negative.curves.push_back({});
  CurvePoint p;
  p.n_cpu_moe = 1;
  p.prefill = Summary{};
  p.prefill->mean = -1;
  negative.curves[0].points.push_back(p);
  EXPECT_FALSE(BaselineFromAnalysis(negative, 0, "x", nullptr).ok());
}

TEST(BaselineTest, TheSessionLearnsFromItsFirstRequestsOnly) {
  SessionBaseline s;
  // 2 ms per token + 0.1 us per token of depth.
  auto t = [](double d) { return 0.002 + 1e-7 * d; };
  for (int i = 0; i < SessionBaseline::kReferenceCount; ++i) {
    const double d = 500.0 + 1000.0 * i;
    EXPECT_FALSE(s.prefill_ready());
    s.OfferPrefill(1000, 1000 * t(d), d);
    s.OfferDecode(100, 100 * t(d) * 10, d);
  }
  ASSERT_TRUE(s.prefill_ready() && s.decode_ready());
  EXPECT_NEAR(*s.At(20000).prefill_tps, 1 / t(20000), 1e-6 / t(20000));
  EXPECT_NEAR(*s.At(20000).decode_tps, 0.1 / t(20000), 1e-6);
  s.OfferPrefill(1000, 100, 30000);  // a late slowdown is not learnt
  EXPECT_NEAR(*s.At(30000).prefill_tps, 1 / t(30000), 1e-6 / t(30000));
}

TEST(BaselineTest, TheSessionHoldsTheMeanWhenDepthsAreTooClose) {
  SessionBaseline s;
  for (int i = 0; i < SessionBaseline::kReferenceCount; ++i) {
    s.OfferPrefill(1000, i % 2 ? 1.0 : 2.0, 100.0 + i);
  }
  ASSERT_TRUE(s.prefill_ready());
  // Requests alternate 1 s and 2 s: the odd ones (count / 2 of them, rounded
  // down) took 1 s, the even ones the rest.
  const int fast = SessionBaseline::kReferenceCount / 2;
  const int slow = SessionBaseline::kReferenceCount - fast;
  const double mean_rate = 1000.0 * SessionBaseline::kReferenceCount / (fast * 1.0 + slow * 2.0);
  EXPECT_NEAR(*s.At(50000).prefill_tps, mean_rate, 1e-9);
}

TEST(BaselineTest, OneDisturbedRequestDoesNotTiltTheSessionsLine) {
  // Four requests at 470 t/s and the last one twice as slow (another program
  // ran): a least-squares line would expect half the speed 4K tokens further.
  SessionBaseline s;
  const double depths[] = {500, 1619, 2738, 3857, 4976};
  const double rates[] = {482, 469, 467, 470, 235};
  for (int i = 0; i < 5; ++i) {
    s.OfferPrefill(1000, 1000 / rates[i], depths[i]);
    s.OfferDecode(100, 2, depths[i]);
  }
  EXPECT_GT(*s.At(9000).prefill_tps, 400);
  EXPECT_LT(*s.At(9000).prefill_tps, 480);
}

TEST(BaselineTest, HealthyRequestsExtendTheSessionsReference) {
  SessionBaseline s;
  s.ExtendPrefill(1000, 1, 0);  // ignored before the reference is complete
  for (int i = 0; i < SessionBaseline::kReferenceCount; ++i) {
    s.OfferPrefill(1000, 1, 1000.0 * i);
    s.OfferDecode(100, 2, 1000.0 * i);
  }
  EXPECT_NE(s.Describe().find("first 5 requests"), std::string::npos);
  // A steady conversation stays steady however many join.
  for (int i = 0; i < 40; ++i) s.ExtendPrefill(1000, 1, 5000.0 + 500 * i);
  EXPECT_NEAR(*s.At(30000).prefill_tps, 1000, 1e-6);
  EXPECT_NE(s.Describe().find("and 19 judged healthy since"), std::string::npos) << s.Describe();
  s.OfferPrefill(1000, 100, 0);  // offers no longer count
  EXPECT_NEAR(*s.At(0).prefill_tps, 1000, 1e-6);
}

TEST(BaselineTest, APredictionIsExpectedAtItsLowerEdgeAndIsProvisional) {
  PredictedBaseline p({{0, 1500.0, 60.0}, {10000, 750.0, std::nullopt}}, "the speed model");
  EXPECT_EQ(p.Kind(), "predicted");
  EXPECT_TRUE(p.provisional());
  EXPECT_DOUBLE_EQ(p.tolerance(), kPredictionTolerance);
  EXPECT_DOUBLE_EQ(*p.Predicted(0).prefill_tps, 1500);
  EXPECT_DOUBLE_EQ(*p.At(0).prefill_tps, 1000);  // 1500 / 1.5
  EXPECT_DOUBLE_EQ(*p.At(0).decode_tps, 40);
  // Seconds per token interpolate linearly, as for measured curves.
  EXPECT_NEAR(*p.Predicted(5000).prefill_tps, 1.0 / (0.5 / 1500 + 0.5 / 750), 1e-9);
  EXPECT_FALSE(CurveBaseline({{0, 1.0, 1.0}}, "m").provisional());
  EXPECT_FALSE(SessionBaseline().provisional());
}

}  // namespace
}  // namespace moetune
