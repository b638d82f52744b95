#include "hw/hwloc_kinds.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

std::vector<int> Range(int first, int last) {
  std::vector<int> v;
  for (int i = first; i <= last; ++i) v.push_back(i);
  return v;
}

int Count(const std::map<int, CoreKind>& kinds, CoreKind kind) {
  int n = 0;
  for (const auto& [cpu, k] : kinds) n += k == kind ? 1 : 0;
  return n;
}

TEST(RankCpuKinds, EfficiencyDecidesWhateverTheOrder) {
  std::string how;
  // hwloc lists ranked kinds by efficiency, but the rank is in the value.
  for (bool p_first : {true, false}) {
    std::vector<CpuKindInfo> kinds = {{Range(0, 11), 1, "", 0, 0}, {Range(12, 19), 0, "", 0, 0}};
    if (!p_first) std::swap(kinds[0], kinds[1]);
    const auto r = RankCpuKinds(kinds, &how);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(how, "hwloc efficiency");
    EXPECT_EQ(r->at(0), CoreKind::kPerformance);
    EXPECT_EQ(r->at(19), CoreKind::kEfficiency);
    EXPECT_EQ(Count(*r, CoreKind::kPerformance), 12);
  }
}

TEST(RankCpuKinds, UnrankedKindsAreNotTakenInListOrder) {
  // Efficiency unknown (-1 for all): hwloc lists kinds in no particular
  // order. The last kind here is the Atom one; it is not the performance kind.
  std::string how;
  const std::vector<CpuKindInfo> kinds = {{Range(0, 11), -1, "IntelCore", 0, 0},
                                          {Range(12, 19), -1, "IntelAtom", 0, 0}};
  const auto r = RankCpuKinds(kinds, &how);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(how, "hwloc core type");
  EXPECT_EQ(r->at(0), CoreKind::kPerformance);
  EXPECT_EQ(r->at(12), CoreKind::kEfficiency);
}

TEST(RankCpuKinds, FrequencyThenCapacityThenNothing) {
  std::string how;
  auto r = RankCpuKinds({{{0, 1}, -1, "", 2000, 0}, {{2, 3}, -1, "", 3200, 0}}, &how);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(how, "hwloc maximum frequency");
  EXPECT_EQ(r->at(2), CoreKind::kPerformance);
  r = RankCpuKinds({{{0}, -1, "", 0, 1024}, {{1}, -1, "", 0, 446}}, &how);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(how, "hwloc capacity");
  EXPECT_EQ(r->at(0), CoreKind::kPerformance);
  // Nothing tells them apart, or a single kind: no guess.
  EXPECT_FALSE(RankCpuKinds({{{0}, -1, "", 0, 0}, {{1}, -1, "", 0, 0}}, &how));
  EXPECT_FALSE(RankCpuKinds({{{0, 1}, 0, "", 0, 0}}, &how));
  EXPECT_FALSE(RankCpuKinds({}, &how));
}

TEST(RankCpuKinds, ThreeTiersHaveOnePerformanceTier) {
  // ARM with little, middle and big cores: only the big ones are "performance".
  std::string how;
  const auto r = RankCpuKinds(
      {{{0, 1, 2, 3}, 0, "", 0, 0}, {{4, 5, 6}, 1, "", 0, 0}, {{7}, 2, "", 0, 0}}, &how);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Count(*r, CoreKind::kPerformance), 1);
  EXPECT_EQ(r->at(7), CoreKind::kPerformance);
  EXPECT_EQ(r->at(5), CoreKind::kEfficiency);
}

}  // namespace
}  // namespace moetune
