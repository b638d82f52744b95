#include "report/watch_report.h"

#include <gtest/gtest.h>

#include "watch/replay.h"

namespace moetune {
namespace {

MonitorStep Step() {
  MonitorStep s;
  s.sample.time_s = 10;
  s.sample.interval_s = 5;
  s.sample.observation.time_s = 10;
  s.sample.observation.prefill = WorkSample{1000, 2, 4500.0};
  s.sample.slots_total = 1;
  s.sample.max_depth = 5000;
  s.check.judgement = Judgement::kGood;
  s.check.prefill_ratio = 0.95;
  s.check.expected_prefill_tps = 520;
  Alarm a;
  a.kind = AlarmKind::kOverflow;
  a.title = "GPU overflow: \x1b[2Jprefill";
  a.fix = "move 1 more layer";
  a.command = {"llama-server", "--n-cpu-moe", "13"};
  s.active = {a};
  return s;
}

TEST(WatchReportTest, ASampleLineIsATraceLine) {
  const auto j = StepJson(Step());
  EXPECT_EQ(j["event"], "sample");
  EXPECT_EQ(j["alarms"], nlohmann::json::array({"overflow"}));
  EXPECT_EQ(j["judgement"]["verdict"], "good");
  auto back = ParseTrace(j.dump() + "\n");
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_DOUBLE_EQ((*back)[0].prefill->rate(), 500);
  EXPECT_DOUBLE_EQ(*(*back)[0].prefill->depth, 4500);
}

TEST(WatchReportTest, TextNeverCarriesControlBytes) {
  const std::string line = StepLine(Step());
  EXPECT_NE(line.find("prefill 500.0 t/s @ depth 4500"), std::string::npos) << line;
  EXPECT_NE(line.find("ALARM:overflow"), std::string::npos);
  const std::string block = AlarmText(Step().active[0]);
  EXPECT_EQ(block.find('\x1b'), std::string::npos);
  EXPECT_NE(block.find("fix: move 1 more layer"), std::string::npos);
  const auto j = AlarmJson(Step().active[0]);
  EXPECT_EQ(j["command_text"], "llama-server --n-cpu-moe 13");
  EXPECT_EQ(j["exit_code"], 3);
}

TEST(WatchReportTest, ServerEventsAsJson) {
  ServerEvent e;
  e.kind = ServerEvent::Kind::kApplied;
  e.argv = {"llama-server", "--n-cpu-moe", "13"};
  e.n_cpu_moe_from = 12;
  e.n_cpu_moe_to = 13;
  e.message = "restarting";
  const auto j = ServerEventJson(e);
  EXPECT_EQ(j["event"], "applied");
  EXPECT_EQ(j["n_cpu_moe_to"], 13);
  EXPECT_EQ(j["command"].size(), 3u);
  EXPECT_NE(ServerEventText(e).find("applied: restarting"), std::string::npos);
}

}  // namespace
}  // namespace moetune
