#include "watch/session.h"

#include <gtest/gtest.h>

#include "watch/replay.h"
#include "watch/trace_test_util.h"

namespace moetune {
namespace {

using testing::WatchFixture;

ServerSettings Tuned() {
  return SettingsFromArgv({"llama-server", "-m", "/m/q.gguf", "-ngl", "99", "--n-cpu-moe", "12",
                           "-c", "32768", "-np", "1", "-fa", "on"});
}

TEST(SessionTest, RunningWithOtherSettingsThanTunedRaisesAndClears) {
  SessionOptions o;
  o.expected = Tuned();
  WatchSession s(o);
  auto same = s.SetServerSettings(Tuned(), 0, false);
  EXPECT_TRUE(same.empty());
  auto changed = Tuned();
  changed.config.placement.n_cpu_moe = 9;
  changed.config.ctx_size = 65536;
  auto ev = s.SetServerSettings(changed, 10, true);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_TRUE(ev[0].raised);
  const Alarm& a = ev[0].alarm;
  EXPECT_EQ(a.kind, AlarmKind::kSettingsChanged);
  EXPECT_NE(a.title.find("restarted"), std::string::npos);
  ASSERT_EQ(a.evidence.size(), 2u);
  EXPECT_EQ(a.evidence[0], "-c: tuned 32768, running 65536");
  EXPECT_EQ(a.evidence[1], "--n-cpu-moe: tuned 12, running 9");
  EXPECT_NE(a.fix.find("--n-cpu-moe 12"), std::string::npos);
  EXPECT_EQ(s.verdict().ExitCode(), 6);
  auto back = s.SetServerSettings(Tuned(), 20, true);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_FALSE(back[0].raised);
  EXPECT_TRUE(s.ActiveAlarms().empty());
}

TEST(SessionTest, WithoutTunedSettingsTheFirstOnesAreTheReference) {
  WatchSession s(SessionOptions{});
  EXPECT_TRUE(s.SetServerSettings(Tuned(), 0, false).empty());
  auto other = Tuned();
  other.config.threads = 4;
  auto ev = s.SetServerSettings(other, 5, true);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_NE(ev[0].alarm.title.find("than when the watch started"), std::string::npos);
}

TEST(SessionTest, PropsOfARemoteServer) {
  SessionOptions o;
  o.expected = Tuned();
  WatchSession s(o);
  ServerProps p;
  p.model_path = "/elsewhere/q.gguf";
  p.total_slots = 1;
  p.n_ctx_per_slot = 32768;
  EXPECT_TRUE(s.SetServerProps(p, 0, false).empty());
  p.n_ctx_per_slot = 8192;
  auto ev = s.SetServerProps(p, 3, true);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_NE(ev[0].alarm.evidence[0].find("tuned 32768, running 8192"), std::string::npos);
}

TEST(SessionTest, OverflowAlarmCarriesTheFullCommand) {
  SessionOptions o;
  o.expected = Tuned();
  o.n_layer = 13;
  std::vector<BaselinePoint> pts = {{0, 1000.0, 40.0}, {32768, 500.0, 30.0}};
  o.baseline = std::make_shared<CurveBaseline>(pts, "measured");
  const auto speed = testing::Spill(
      [](double d) { return std::make_pair(1000 / (1 + d / 32768), 40 / (1 + d / 98304)); }, 0, 10,
      1.1);
  const auto obs = testing::Converse(testing::ChatTurns(4, 1024, 100), speed).PerRequest();
  const Replay r = ReplayObservations(obs, o);
  ASSERT_EQ(r.verdict.Ids(), std::vector<std::string>{"overflow"});
  const Alarm& a = r.verdict.raised[0];
  EXPECT_EQ(a.n_cpu_moe_from, 12);
  EXPECT_EQ(a.n_cpu_moe_to, 13);  // x0.1 asks for two more, capped at the 13 layers
  EXPECT_EQ(a.command, (std::vector<std::string>{"llama-server", "-m", "/m/q.gguf", "-ngl", "99",
                                                 "--n-cpu-moe", "13", "-c", "32768", "-np", "1",
                                                 "-fa", "on"}));
  EXPECT_EQ(r.verdict.ExitCode(), 3);
  EXPECT_EQ(a.data["observations"].size(), 3u);
}

TEST(SessionTest, AnImpossibleNGetsNoCommand) {
  // --n-cpu-moe 2147483647 once became "--n-cpu-moe -2147483647" (int overflow),
  // and a negative N was built on; serve --apply would have restarted with it.
  for (const char* n : {"2147483647", "-5", "100001"}) {
    SessionOptions o;
    o.expected = SettingsFromArgv({"llama-server", "-m", "/m/q.gguf", "--n-cpu-moe", n});
    o.baseline =
        std::make_shared<CurveBaseline>(std::vector<BaselinePoint>{{0, 1000.0, 40.0}}, "m");
    const auto obs = testing::Converse(testing::ChatTurns(4, 1024, 100), [](double) {
                       return std::make_pair(150.0, 38.0);
                     }).PerRequest();
    const Replay r = ReplayObservations(obs, o);
    ASSERT_EQ(r.verdict.raised.size(), 1u) << n;
    const Alarm& a = r.verdict.raised[0];
    EXPECT_TRUE(a.command.empty()) << n;
    EXPECT_EQ(a.fix.find("--n-cpu-moe -"), std::string::npos) << a.fix;
    EXPECT_NE(a.fix.find(std::string("--n-cpu-moe value '") + n + "'"), std::string::npos) << a.fix;
  }
}

TEST(SessionTest, OverflowWithoutAKnownNStillSaysWhatToDo) {
  SessionOptions o;
  o.baseline = std::make_shared<CurveBaseline>(std::vector<BaselinePoint>{{0, 1000.0, 40.0}}, "m");
  const auto obs = testing::Converse(testing::ChatTurns(4, 1024, 100), [](double) {
                     return std::make_pair(150.0, 38.0);
                   }).PerRequest();
  const Replay r = ReplayObservations(obs, o);
  ASSERT_EQ(r.verdict.raised.size(), 1u);
  EXPECT_TRUE(r.verdict.raised[0].command.empty());
  EXPECT_NE(r.verdict.raised[0].fix.find("--n-cpu-moe N+2"), std::string::npos);  // x0.15
}

TEST(SessionTest, ResourceAlarmsAndTheirExitCodes) {
  WatchSession s(SessionOptions{});
  s.SetServerSettings(Tuned(), 0, false);
  for (int i = 0; i < 3; ++i) {
    FaultSample f;
    f.time_s = i;
    f.interval_s = 5;
    f.busy = true;
    f.major_faults = 4000;
    f.rss_bytes = int64_t{20} << 30;
    s.AddFaults(f);
  }
  ASSERT_EQ(s.ActiveAlarms().size(), 1u);
  EXPECT_NE(s.ActiveAlarms()[0].fix.find("--n-cpu-moe below 12"), std::string::npos);
  GpuInfo g;
  g.free_bytes = int64_t{4} << 30;
  g.processes_known = true;
  s.AddGpuScan({g}, {}, 0);
  g.free_bytes = int64_t{1} << 30;
  g.processes.push_back({4242, "game", int64_t{3} << 30});
  s.AddGpuScan({g}, {}, 5);
  auto ev = s.AddGpuScan({g}, {}, 10);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_NE(ev[0].alarm.title.find("'game' (pid 4242)"), std::string::npos);
  EXPECT_NE(ev[0].alarm.fix.find("--reserve 3.00 GiB"), std::string::npos);
  EXPECT_EQ(s.verdict().ExitCode(), 4);  // page faults (4) before GPU memory (5)
  EXPECT_EQ(s.verdict().Ids(), (std::vector<std::string>{"page_faults", "gpu_memory_taken"}));
}

// The same session judged live (two samples per request) and from its log.
TEST(SessionTest, LogAndLiveGiveTheSameVerdict) {
  const auto spill = testing::Spill(testing::Healthy(900, 40, 40000, 80000), 5000, 5, 1.2);
  for (const auto& speed : {testing::Healthy(900, 40, 3000, 4000), spill}) {
    const auto c = testing::Converse(testing::ChatTurns(14), speed, 3, 0.05);
    const ServerLog log = ParseServerLog(c.Log());
    SessionOptions o;
    o.expected = SettingsFromArgv(
        {"llama-server", "-m", "/models/sim.gguf", "--n-cpu-moe", "12", "-c", "65536"});
    const Replay from_log = ReplayLog(log, o);
    EXPECT_TRUE(from_log.start_events.empty());  // the log's model and context match
    const Replay live = ReplayObservations(c.Live(), o);
    EXPECT_EQ(from_log.verdict.Ids(), live.verdict.Ids());
  }
}

TEST(SessionTest, RecordedLogsAndTheirLiveTracesAgree) {
  // Each fixture pair is one real session: the JSON lines serve printed while
  // it ran, and llama-server's own log of it.
  for (const char* name : {"healthy-chat-t1", "healthy-agent-t2-noisy", "healthy-parallel-np2",
                           "healthy-single-slow"}) {
    auto log = ReadServerLog(WatchFixture(std::string(name) + ".log"));
    ASSERT_TRUE(log.ok()) << log.error().message();
    auto trace = ReadTrace(WatchFixture(std::string(name) + ".jsonl"));
    ASSERT_TRUE(trace.ok());
    SessionOptions o;
    const Replay a = ReplayLog(*log, o);
    const Replay b = ReplayObservations(*trace, o);
    EXPECT_EQ(a.verdict.Ids(), b.verdict.Ids()) << name;
    // The prefill of every request appears in both, at the same speed.
    std::vector<double> from_log, from_trace;
    for (const auto& r : log->requests) {
      from_log.push_back(static_cast<double>(r.prompt_tokens) / (r.prompt_ms / 1e3));
    }
    for (const auto& o2 : *trace) {
      if (o2.prefill) from_trace.push_back(o2.prefill->rate());
    }
    ASSERT_EQ(from_log.size(), from_trace.size()) << name;
    for (std::size_t i = 0; i < from_log.size(); ++i) {
      // Parallel slots may end in one interval: compare where they did not.
      if (std::string(name) == "healthy-parallel-np2") break;
      EXPECT_NEAR(from_trace[i], from_log[i], from_log[i] * 0.01) << name << " request " << i;
    }
  }
}

}  // namespace
}  // namespace moetune
