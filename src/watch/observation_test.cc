#include "watch/observation.h"

#include <gtest/gtest.h>

#include "watch/alarm.h"
#include "watch/replay.h"

namespace moetune {
namespace {

TEST(ObservationTest, JsonRoundTrip) {
  Observation o;
  o.time_s = 12.5;
  o.prefill = WorkSample{678, 2.56, 1073.0};
  o.decode = WorkSample{24, 0.18, std::nullopt};
  o.concurrent = true;
  auto back = ObservationFromJson(ObservationJson(o));
  ASSERT_TRUE(back.ok());
  EXPECT_DOUBLE_EQ(back->time_s, 12.5);
  EXPECT_DOUBLE_EQ(*back->prefill->depth, 1073);
  EXPECT_DOUBLE_EQ(back->prefill->rate(), 678 / 2.56);
  EXPECT_FALSE(back->decode->depth.has_value());
  EXPECT_TRUE(back->concurrent);
}

TEST(ObservationTest, TracesSkipOtherEventsAndRejectBadLines) {
  auto t = ParseTrace(
      "{\"event\":\"start\",\"url\":\"x\"}\n\n"
      "{\"event\":\"sample\",\"t\":1,\"prefill\":{\"tokens\":10,\"seconds\":0.1,\"depth\":5},"
      "\"decode\":null}\n"
      "{\"t\":2,\"prefill\":{\"tokens\":0,\"seconds\":0}}\n"
      "{\"event\":\"alarm\",\"alarm\":{}}\n");
  ASSERT_TRUE(t.ok()) << t.error().message();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_TRUE((*t)[0].prefill.has_value());
  EXPECT_FALSE((*t)[1].prefill.has_value());  // no work is no observation of it
  auto bad = ParseTrace("{\"t\":1}\nnot json\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("line 2"), std::string::npos);
  EXPECT_FALSE(ParseTrace("{\"prefill\":{\"tokens\":-1,\"seconds\":1}}").ok());
  EXPECT_FALSE(ParseTrace("{\"prefill\":5}").ok());
}

TEST(ObservationTest, VerdictExitCodesAndIds) {
  Verdict v;
  EXPECT_EQ(v.ExitCode(), 0);
  Alarm gpu;
  gpu.kind = AlarmKind::kGpuMemoryTaken;
  Alarm over;
  over.kind = AlarmKind::kOverflow;
  v.raised = {gpu, over, gpu};
  EXPECT_EQ(v.ExitCode(), 3);
  EXPECT_EQ(v.Ids(), (std::vector<std::string>{"gpu_memory_taken", "overflow"}));
  EXPECT_EQ(AlarmExitCode(AlarmKind::kSettingsChanged), 6);
  EXPECT_STREQ(AlarmId(AlarmKind::kPageFaults), "page_faults");
}

}  // namespace
}  // namespace moetune
