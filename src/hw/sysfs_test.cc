#include "hw/sysfs.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(ParseCpuList, RangesAndSingles) {
  EXPECT_EQ(*ParseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*ParseCpuList(""), std::vector<int>{});
  EXPECT_EQ(*ParseCpuList("5"), std::vector<int>{5});
}

TEST(ParseCpuList, RejectsGarbage) {
  EXPECT_FALSE(ParseCpuList("a-b").has_value());
  EXPECT_FALSE(ParseCpuList("3-1").has_value());
  EXPECT_FALSE(ParseCpuList("0-4000000000").has_value());
}

TEST(ParseCpuList, RepeatedRangesStayOneSet) {
  // A damaged profile's "0-65535,0-65535,..." grew a vector of every repeat
  // (gigabytes for a few MB of text); the CPUs are a set, built once.
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "0-65535,";
  text += "3";
  auto cpus = ParseCpuList(text);
  ASSERT_TRUE(cpus.has_value());
  EXPECT_EQ(cpus->size(), 65536u);
  EXPECT_EQ(cpus->front(), 0);
  EXPECT_EQ(cpus->back(), 65535);
  EXPECT_EQ(*ParseCpuList("8-9,0-3,2-5,9"), (std::vector<int>{0, 1, 2, 3, 4, 5, 8, 9}));
}

TEST(ParseCpuMask, ReadsGroupsMostSignificantFirst) {
  EXPECT_EQ(*ParseCpuMask("00000003"), (std::vector<int>{0, 1}));
  EXPECT_EQ(*ParseCpuMask("00000001,00000000"), std::vector<int>{32});
  EXPECT_FALSE(ParseCpuMask("zz").has_value());
}

TEST(FormatCpuList, CompressesRuns) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(SysRoot, ResolvesUnderRoot) {
  SysRoot fixture("/some/tree/");
  EXPECT_FALSE(fixture.is_live());
  EXPECT_EQ(fixture.Resolve("/proc/meminfo"), "/some/tree/proc/meminfo");
  SysRoot live;
  EXPECT_TRUE(live.is_live());
  EXPECT_EQ(live.Resolve("/proc/meminfo"), "/proc/meminfo");
  EXPECT_FALSE(fixture.Read("/proc/meminfo").has_value());
}

}  // namespace
}  // namespace moetune
