#include "hw/system_memory.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

SysRoot Fixture(const char* name) {
  return SysRoot(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/hw/" + name);
}

TEST(SystemMemory, ReadsMeminfo) {
  const SystemMemory m = ReadSystemMemory(Fixture("intel_hybrid_6p8e"));
  EXPECT_EQ(m.total_bytes, 64 * kGiB);
  EXPECT_EQ(m.available_bytes, 58 * kGiB);
  EXPECT_EQ(m.swap_total_bytes, 8 * kGiB);
  EXPECT_FALSE(m.cgroup_limit_bytes.has_value());  // memory.max "max"
}

TEST(SystemMemory, V1UnlimitedIsNoLimit) {
  const SystemMemory m = ReadSystemMemory(Fixture("amd_2ccd_smt"));
  EXPECT_FALSE(m.cgroup_limit_bytes.has_value());
  EXPECT_EQ(m.available_bytes, 88 * kGiB);
}

TEST(SystemMemory, CgroupLimitCapsAvailable) {
  const SystemMemory m = ReadSystemMemory(Fixture("cgroup_limited"));
  EXPECT_EQ(m.meminfo_available_bytes, 120 * kGiB);
  ASSERT_TRUE(m.cgroup_limit_bytes.has_value());
  EXPECT_EQ(*m.cgroup_limit_bytes, 16 * kGiB);
  EXPECT_EQ(m.available_bytes, 14 * kGiB);  // 16 GiB limit - 2 GiB charged
}

TEST(SystemMemory, MissingMeminfoIsNamed) {
  const SystemMemory m = ReadSystemMemory(SysRoot("/nonexistent-moetune-root"));
  EXPECT_EQ(m.total_bytes, 0);
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes[0].find("/proc/meminfo"), std::string::npos);
}

TEST(SystemMemory, LiveSystemHasRam) {
  const SystemMemory m = ReadSystemMemory(SysRoot("/"));
  EXPECT_GT(m.total_bytes, 0);
  EXPECT_GT(m.available_bytes, 0);
  EXPECT_LE(m.available_bytes, m.total_bytes);
}

}  // namespace
}  // namespace moetune
