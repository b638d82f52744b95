// The overflow rule on handwritten traces: it must fire on every trace with
// the overflow signature and on no healthy one, including the real traces
// recorded on this machine (tests/fixtures/watch). Traces from the simulated
// engine's silent-spill mode are in sim_trace_test.cc.
#include "watch/overflow.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "plan/placement.h"
#include "tune/tune_reader.h"
#include "watch/replay.h"
#include "watch/trace_test_util.h"

namespace moetune {
namespace {

using testing::ChatTurns;
using testing::Converse;
using testing::Healthy;
using testing::Spill;
using testing::WatchFixture;

std::shared_ptr<const Baseline> Measured(const testing::SpeedAtDepth& speed,
                                         const std::vector<int>& depths = {0, 8192, 32768}) {
  std::vector<BaselinePoint> pts;
  for (int d : depths) {
    const auto s = speed(d);
    pts.push_back({d, s.first, s.second});
  }
  return std::make_shared<CurveBaseline>(pts, "handwritten");
}

SessionOptions With(std::shared_ptr<const Baseline> b, int ubatch = 512) {
  SessionOptions o;
  o.baseline = std::move(b);
  o.expected = SettingsFromArgv(
      {"llama-server", "-m", "m.gguf", "--n-cpu-moe", "10", "-ub", std::to_string(ubatch)});
  return o;
}

std::vector<std::string> Fired(const Replay& r) { return r.verdict.Ids(); }

bool FiresOverflow(const std::vector<Observation>& obs, const SessionOptions& o) {
  const Replay r = ReplayObservations(obs, o);
  const auto ids = Fired(r);
  return std::find(ids.begin(), ids.end(), "overflow") != ids.end();
}

// A GPU machine with experts partly on the CPU: prefill 900 t/s at depth 0,
// halving by 40K; decode 40 t/s, two thirds by 40K.
const testing::SpeedAtDepth kGpu = Healthy(900, 40, 40000, 80000);

TEST(OverflowTest, SpillThatStartsAtDepthFiresWithTheSessionBaseline) {
  // Fits at first; from 6K tokens the KV cache spills: prefill /5, decode /1.25.
  const auto c = Converse(ChatTurns(16, 700, 120), Spill(kGpu, 6000, 5, 1.25));
  for (const auto& obs : {c.PerRequest(), c.Live()}) {
    const Replay r = ReplayObservations(obs, With(nullptr));
    ASSERT_EQ(Fired(r), std::vector<std::string>{"overflow"});
    const Alarm& a = r.verdict.raised.front();
    EXPECT_EQ(a.n_cpu_moe_from, 10);
    // Prefill x0.2 (700-token prompts in two micro-batches: about x0.22
    // against the lower bound): two more layers.
    EXPECT_EQ(a.n_cpu_moe_to, 12);
    EXPECT_NE(ShellJoin(a.command).find("--n-cpu-moe 12"), std::string::npos);
    EXPECT_GE(a.evidence.size(), 3u);
  }
}

TEST(OverflowTest, OverflowFromTheStartFiresAgainstTheMeasuredBaseline) {
  // The tuned curves say 900 t/s; the server runs at a quarter of that from
  // the first request (someone else took VRAM before it started).
  const auto obs = Converse(ChatTurns(5, 800, 100), Spill(kGpu, 0, 6, 1.15)).Live();
  const Replay r = ReplayObservations(obs, With(Measured(kGpu)));
  ASSERT_EQ(Fired(r), std::vector<std::string>{"overflow"});
  EXPECT_EQ(r.verdict.raised.front().n_cpu_moe_to, 12);  // x0.17: two more layers
}

TEST(OverflowTest, NoisyOverflowStillFires) {
  // Every request 15% (log-normal) off its expected speed, against the
  // session's own first requests; 25% against a measured baseline.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    const auto turns = ChatTurns(18, 1000, 100);
    const auto spill = Spill(kGpu, 5000, 4, 1.2);
    EXPECT_TRUE(FiresOverflow(Converse(turns, spill, seed, 0.15).Live(), With(nullptr)))
        << "seed " << seed;
    EXPECT_TRUE(
        FiresOverflow(Converse(turns, spill, seed, 0.25).PerRequest(), With(Measured(kGpu))))
        << "seed " << seed;
  }
}

TEST(OverflowTest, ShortestOverflowThatCanFire) {
  // Three requests are the minimum evidence.
  const auto obs = Converse(ChatTurns(3, 1000, 64), Spill(kGpu, 0, 4, 1.2)).PerRequest();
  EXPECT_TRUE(FiresOverflow(obs, With(Measured(kGpu))));
  const std::vector<Observation> two(obs.begin(), obs.begin() + 2);
  EXPECT_FALSE(FiresOverflow(two, With(Measured(kGpu))));
}

TEST(OverflowTest, PromptsJustAboveAMicroBatchNeedADeeperCollapse) {
  // 600 tokens with -ub 512 may cost two full micro-batches, so the rule
  // expects only 600/1024 of the pp512 speed: a 4x collapse is not enough
  // evidence there, a 6x one is (docs/watch.md, sensitivity).
  const auto turns = ChatTurns(8, 600, 100);
  EXPECT_FALSE(
      FiresOverflow(Converse(turns, Spill(kGpu, 0, 4, 1.2)).PerRequest(), With(Measured(kGpu))));
  EXPECT_TRUE(
      FiresOverflow(Converse(turns, Spill(kGpu, 0, 6, 1.2)).PerRequest(), With(Measured(kGpu))));
}

TEST(OverflowTest, NormalGrowthWithDepthIsNoAlarm) {
  // Attention-heavy growth (prefill /5 by 10K tokens, decode /4), judged by the
  // session's own first requests and by a baseline measured at depth 0 only.
  const auto steep = Healthy(900, 40, 2500, 3300);
  for (unsigned seed = 1; seed <= 10; ++seed) {
    const auto c = Converse(ChatTurns(20, 600, 100), steep, seed, 0.15);
    EXPECT_FALSE(FiresOverflow(c.Live(), With(nullptr))) << seed;
    EXPECT_FALSE(FiresOverflow(c.PerRequest(), With(Measured(steep, {0})))) << seed;
    EXPECT_FALSE(FiresOverflow(c.PerRequest(), With(Measured(steep)))) << seed;
  }
}

TEST(OverflowTest, AUniformlySlowMachineIsNoOverflow) {
  // Another program competes for the CPU: prefill and decode both at a third.
  const auto slow = [](double d) {
    auto s = kGpu(d);
    return std::make_pair(s.first / 3, s.second / 3);
  };
  const auto obs = Converse(ChatTurns(10, 700, 100), slow).Live();
  EXPECT_FALSE(FiresOverflow(obs, With(Measured(kGpu))));
}

TEST(OverflowTest, AnOverflowThatDeepensKeepsTheEvidence) {
  // From 6K tokens the compute buffer spills (prefill /5, decode /1.2); from
  // 7.5K the KV cache too, and decode collapses as well (/5 in all). Those
  // requests continue the run of bad ones instead of passing for "consistent".
  const auto deep = [](double d) {
    auto s = kGpu(d);
    if (d >= 6000) s = {s.first / 5, s.second / 1.2};
    if (d >= 7500) s.second /= 4;
    return s;
  };
  const auto c = Converse(ChatTurns(16, 700, 120), deep);
  for (const auto& obs : {c.PerRequest(), c.Live()}) {
    const Replay r = ReplayObservations(obs, With(nullptr));
    ASSERT_EQ(Fired(r), std::vector<std::string>{"overflow"});
    EXPECT_TRUE(r.active_at_end.size() == 1) << "the alarm must not clear while it deepens";
    int deepened = 0;
    for (const auto& e : r.entries)
      deepened += e.check.reason.find("the overflow deepened") != std::string::npos;
    EXPECT_GT(deepened, 3);
  }
  // Both slow from the first request, with no lopsided one before: a slow
  // machine, not this alarm.
  const auto both = [](double d) {
    auto s = kGpu(d);
    return std::make_pair(s.first / 5, s.second / 5);
  };
  EXPECT_FALSE(
      FiresOverflow(Converse(ChatTurns(10, 700, 100), both).PerRequest(), With(Measured(kGpu))));
}

TEST(OverflowTest, ASingleSlowRequestIsNoAlarm) {
  auto c = Converse(ChatTurns(12, 700, 100), kGpu);
  c.requests[6].prompt_s *= 10;  // one request waited on the disk
  for (const auto& obs : {c.Live(), c.PerRequest()}) {
    const Replay r = ReplayObservations(obs, With(Measured(kGpu)));
    EXPECT_TRUE(Fired(r).empty());
    int bad = 0;
    for (const auto& e : r.entries) bad += e.check.judgement == Judgement::kBad;
    EXPECT_EQ(bad, 1);  // seen, judged, not enough evidence
  }
}

TEST(OverflowTest, AnIdleServerIsNoAlarm) {
  std::vector<Observation> idle(50);
  for (std::size_t i = 0; i < idle.size(); ++i) idle[i].time_s = static_cast<double>(i);
  EXPECT_FALSE(FiresOverflow(idle, With(Measured(kGpu))));
  EXPECT_FALSE(FiresOverflow(idle, With(nullptr)));
}

TEST(OverflowTest, ShortPromptsAreJudgedAgainstALowerBound) {
  // Each micro-batch copies the CPU-side experts to the GPU, so 100 tokens
  // cost as much as 512: per token they look 5x slower than pp512. Not overflow.
  const auto fixed_cost = [](double d) {
    auto s = kGpu(d);
    return std::make_pair(s.first * 100.0 / 512.0, s.second);
  };
  const auto obs = Converse(ChatTurns(20, 100, 100), fixed_cost).PerRequest();
  const Replay r = ReplayObservations(obs, With(Measured(kGpu)));
  EXPECT_TRUE(Fired(r).empty());
  for (const auto& e : r.entries) EXPECT_NE(e.check.judgement, Judgement::kBad);
}

TEST(OverflowTest, TinyPromptsAndConcurrentSlotsAreNotEvidence) {
  auto obs = Converse(ChatTurns(10, 30, 50), Spill(kGpu, 0, 8, 1.1)).PerRequest();
  EXPECT_FALSE(FiresOverflow(obs, With(Measured(kGpu))));
  auto big = Converse(ChatTurns(10, 800, 50), Spill(kGpu, 0, 8, 1.1)).PerRequest();
  for (auto& o : big) o.concurrent = true;
  EXPECT_FALSE(FiresOverflow(big, With(Measured(kGpu))));
}

TEST(OverflowTest, HysteresisClearsAfterThreeGoodRequests) {
  // Overflow for a while, then the user closed the program that took VRAM.
  auto turns = ChatTurns(20, 700, 100);
  const auto over = Converse(turns, Spill(kGpu, 0, 5, 1.2)).PerRequest();
  const auto fine = Converse(turns, kGpu).PerRequest();
  std::vector<Observation> obs(over.begin(), over.begin() + 6);
  obs.insert(obs.end(), fine.begin() + 6, fine.begin() + 8);
  OverflowDetector d(Measured(kGpu), 512);
  int raised = 0, cleared = 0;
  for (const auto& o : obs) {
    d.Add(o);
    raised += d.raised_now();
    cleared += d.cleared_now();
  }
  EXPECT_EQ(raised, 1);
  EXPECT_EQ(cleared, 0);  // two good ones are not enough
  EXPECT_TRUE(d.active());
  d.Add(fine[8]);
  EXPECT_TRUE(d.cleared_now());
  EXPECT_FALSE(d.active());
}

// --- A predicted baseline: judges from the first request, then yields ---

// The speed model's prediction of kGpu scaled by `prefill_error` (how much
// too fast the model is for prefill; decode exact).
std::shared_ptr<const Baseline> Predicted(double prefill_error = 1.0) {
  std::vector<BaselinePoint> pts;
  for (int d : {0, 4096, 8192, 16384, 32768}) {
    const auto s = kGpu(d);
    pts.push_back({d, s.first * prefill_error, s.second});
  }
  return std::make_shared<PredictedBaseline>(pts, "the speed model");
}

TEST(OverflowTest, APredictionCatchesAnOverflowFromTheFirstRequest) {
  // The session's own requests could never see this: they are all slow.
  const auto obs = Converse(ChatTurns(12, 800, 100), Spill(kGpu, 0, 5, 1.2)).Live();
  OverflowDetector d(Predicted(), 512);
  int raised_at = -1, prefills = 0;
  for (const auto& o : obs) {
    const auto c = d.Add(o);
    prefills += c.prefill_ratio.has_value();
    if (d.raised_now()) raised_at = prefills;
  }
  EXPECT_EQ(raised_at, 3);  // the third request, as with a measured baseline
  EXPECT_TRUE(d.active());
  // Bad requests are not learnt: the prediction still judges at the end.
  EXPECT_FALSE(d.handed_over());
  EXPECT_EQ(d.baseline().Kind(), "predicted");
}

TEST(OverflowTest, TheSessionsOwnRequestsReplaceAPredictionOnceTheyAreIn) {
  // A prediction 2.5x too fast for prefill (an uncalibrated model): prefill
  // at x0.6 of its lower edge is neutral, never bad; after five requests the
  // session's own speeds judge, and they find a healthy server.
  const auto c = Converse(ChatTurns(14, 1024, 100), kGpu);
  for (const auto& obs : {c.PerRequest(), c.Live()}) {
    OverflowDetector d(Predicted(2.5), 512);
    int bad = 0, good_after = 0;
    bool changed = false;
    for (const auto& o : obs) {
      const auto check = d.Add(o);
      bad += check.judgement == Judgement::kBad;
      if (check.baseline_changed) {
        changed = true;
        EXPECT_NE(check.reason.find("measured wins over predicted"), std::string::npos);
        EXPECT_NE(check.reason.find("prefill x0.40"), std::string::npos) << check.reason;
      }
      if (d.handed_over()) good_after += check.judgement == Judgement::kGood;
    }
    EXPECT_EQ(bad, 0);
    EXPECT_TRUE(changed);
    EXPECT_TRUE(d.handed_over());
    EXPECT_EQ(d.baseline().Kind(), "session");
    EXPECT_GE(good_after, 5);
  }
}

TEST(OverflowTest, ASpillWhileThePredictionJudgesIsNotLearnt) {
  // The prediction is right but tolerant: a spill from the fourth request
  // (prefill /2.6: x0.58 of its lower edge, neutral) lags behind the first
  // three requests, so it does not complete the session's reference with them.
  const auto obs = Converse(ChatTurns(5, 1024, 100), Spill(kGpu, 3500, 2.6, 1.1)).PerRequest();
  OverflowDetector d(Predicted(), 512);
  for (const auto& o : obs) {
    const auto c = d.Add(o);
    EXPECT_NE(c.judgement, Judgement::kBad);
  }
  EXPECT_FALSE(d.handed_over());
  // The same five requests without the spill complete it.
  OverflowDetector healthy(Predicted(), 512);
  for (const auto& o : Converse(ChatTurns(5, 1024, 100), kGpu).PerRequest()) healthy.Add(o);
  EXPECT_TRUE(healthy.handed_over());
}

TEST(OverflowTest, AfterThePredictionYieldsALaterSpillStillFires) {
  const auto obs = Converse(ChatTurns(16, 700, 120), Spill(kGpu, 6000, 5, 1.25)).Live();
  const Replay r = ReplayObservations(obs, With(Predicted(1.3)));
  ASSERT_EQ(Fired(r), std::vector<std::string>{"overflow"});
  std::vector<std::string> kinds;
  for (const auto& e : r.entries) {
    if (e.check.judgement == Judgement::kBad) kinds.push_back(e.check.baseline_kind);
  }
  ASSERT_FALSE(kinds.empty());
  EXPECT_EQ(kinds.front(), "session");  // judged by the server's own first requests
}

TEST(OverflowTest, APredictionFarTooFastForPrefillAloneLooksLikeAnOverflow) {
  // The documented limit of a predicted baseline: prefill predicted more than
  // 3x (2 x the 1.5 tolerance) too fast while decode is right is the overflow
  // signature itself. Calibration (moetune calibrate) is the remedy.
  const auto obs = Converse(ChatTurns(8, 1024, 100), kGpu).PerRequest();
  EXPECT_FALSE(FiresOverflow(obs, With(Predicted(2.9))));
  EXPECT_TRUE(FiresOverflow(obs, With(Predicted(3.1))));
}

// --- Real traces recorded on this machine with `moetune serve --json` ---

const char* kRecorded[] = {"healthy-chat-t1.jsonl", "healthy-agent-t2-noisy.jsonl",
                           "healthy-parallel-np2.jsonl", "healthy-single-slow.jsonl",
                           "healthy-idle.jsonl"};

std::shared_ptr<const Baseline> TinyMeasured() {
  std::ifstream f(WatchFixture("tiny16k-analysis.json"));
  std::stringstream ss;
  ss << f.rdbuf();
  auto analysis = AnalysisFromJson(nlohmann::json::parse(ss.str()));
  EXPECT_TRUE(analysis.ok());
  if (!analysis.ok()) return nullptr;
  auto b = BaselineFromAnalysis(*analysis, 0, "tiny16k-analysis.json", nullptr);
  EXPECT_TRUE(b.ok());
  return b.ok() ? std::shared_ptr<const Baseline>(std::move(b).value()) : nullptr;
}

TEST(OverflowTest, RecordedHealthyTracesRaiseNoAlarm) {
  int judged = 0;
  for (const char* name : kRecorded) {
    auto obs = ReadTrace(WatchFixture(name));
    ASSERT_TRUE(obs.ok()) << obs.error().message();
    ASSERT_FALSE(obs->empty()) << name;
    for (int ub : {256, 512}) {
      for (const auto& b : {std::shared_ptr<const Baseline>(), TinyMeasured()}) {
        const Replay r = ReplayObservations(*obs, With(b, ub));
        EXPECT_TRUE(Fired(r).empty()) << name << " ub " << ub;
        for (const auto& e : r.entries) judged += e.check.judgement != Judgement::kNotJudged;
      }
    }
  }
  EXPECT_GT(judged, 20);  // the rule was applied, not skipped
}

TEST(OverflowTest, RecordedSingleSlowRequestIsSeenButNotAlarmed) {
  // A CPU hog ran during one request of this recording: its prefill fell to
  // x0.25 of the session's expectation.
  auto obs = ReadTrace(WatchFixture("healthy-single-slow.jsonl"));
  ASSERT_TRUE(obs.ok());
  const Replay r = ReplayObservations(*obs, With(nullptr, 256));
  double worst = 10;
  for (const auto& e : r.entries) {
    if (e.check.prefill_ratio) worst = std::min(worst, *e.check.prefill_ratio);
  }
  EXPECT_LT(worst, 0.5);
  EXPECT_TRUE(Fired(r).empty());
}

TEST(OverflowTest, RecordedTraceWithAnOverflowSpliceFires) {
  // The recorded healthy conversation, with its later requests slowed the way
  // a silent spill slows them (prefill /4, decode /1.2): the rule must see it
  // against the session's own early requests.
  auto obs = ReadTrace(WatchFixture("healthy-chat-t1.jsonl"));
  ASSERT_TRUE(obs.ok());
  int prefills = 0;
  for (auto& o : *obs) {
    if (o.prefill && ++prefills > 5) o.prefill->seconds *= 4;
    if (o.decode && prefills > 5) o.decode->seconds *= 1.2;
  }
  EXPECT_TRUE(FiresOverflow(*obs, With(nullptr, 256)));
}

}  // namespace
}  // namespace moetune
