#include "hw/cpu_topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace moetune {
namespace {

SysRoot Fixture(const char* name) {
  return SysRoot(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/hw/" + name);
}

std::vector<int> Counts(const CpuTopology& t) {
  std::vector<int> out;
  for (const auto& s : t.suggested_threads) out.push_back(s.threads);
  return out;
}

const ThreadSuggestion* Find(const CpuTopology& t, const std::string& label) {
  for (const auto& s : t.suggested_threads) {
    if (s.label == label) return &s;
  }
  return nullptr;
}

TEST(CpuTopology, IntelHybrid6P8E) {
  const CpuTopology t = ReadCpuTopology(Fixture("intel_hybrid_6p8e"), /*use_hwloc=*/false);
  EXPECT_EQ(t.model_name, "13th Gen Intel(R) Core(TM) i5-13600K");
  EXPECT_EQ(t.sockets, 1);
  EXPECT_EQ(t.online_cpus, 20);
  EXPECT_EQ(t.logical_cpus, 20);
  EXPECT_EQ(t.physical_cores, 14);
  EXPECT_EQ(t.max_smt, 2);
  EXPECT_TRUE(t.hybrid);
  EXPECT_EQ(t.kind_source, "sysfs cpu_core/cpu_atom");
  EXPECT_EQ(t.performance_cores, 6);
  EXPECT_EQ(t.efficiency_cores, 8);
  EXPECT_EQ(t.llc_bytes, 24 * 1024 * 1024);
  EXPECT_EQ(t.l3_domains, 1);
  EXPECT_FALSE(t.cpu_quota.has_value());
  // Physical cores, P-cores only, all logical CPUs.
  EXPECT_EQ(Counts(t), (std::vector<int>{14, 6, 20}));
  ASSERT_NE(Find(t, "performance_cores"), nullptr);
  EXPECT_NE(Find(t, "performance_cores")->reason.find("E-cores"), std::string::npos);
  // llama.cpp counts P-cores on hybrid CPUs (one per SMT pair).
  EXPECT_EQ(t.llama_default_threads, 6);
  EXPECT_NE(t.llama_default_reason.find("hybrid"), std::string::npos);
}

TEST(CpuTopology, HwlocKindsComeFirstAndSysfsIsTheFallback) {
  std::vector<int> p_cpus, e_cpus;
  for (int c = 0; c <= 11; ++c) p_cpus.push_back(c);
  for (int c = 12; c <= 19; ++c) e_cpus.push_back(c);
  // Ranked by hwloc: its efficiency decides.
  CpuTopology t =
      ReadCpuTopologyWithKinds(Fixture("intel_hybrid_6p8e"),
                               {{e_cpus, 0, "IntelAtom", 0, 0}, {p_cpus, 1, "IntelCore", 0, 0}});
  EXPECT_EQ(t.kind_source, "hwloc efficiency");
  EXPECT_EQ(t.performance_cores, 6);
  EXPECT_EQ(t.efficiency_cores, 8);
  // Unranked, P kind listed first: the core type decides (the list order did,
  // wrongly: 8 "performance" Atom cores).
  t = ReadCpuTopologyWithKinds(Fixture("intel_hybrid_6p8e"),
                               {{p_cpus, -1, "IntelCore", 0, 0}, {e_cpus, -1, "IntelAtom", 0, 0}});
  EXPECT_EQ(t.kind_source, "hwloc core type");
  EXPECT_EQ(t.performance_cores, 6);
  // hwloc cannot tell them apart: the sysfs PMU lists do.
  t = ReadCpuTopologyWithKinds(Fixture("intel_hybrid_6p8e"),
                               {{p_cpus, -1, "", 0, 0}, {e_cpus, -1, "", 0, 0}});
  EXPECT_EQ(t.kind_source, "sysfs cpu_core/cpu_atom");
  EXPECT_EQ(t.performance_cores, 6);
  // A machine without sysfs hints becomes hybrid only through hwloc.
  std::vector<int> ccd0, ccd1;
  for (int c = 0; c < 32; ++c) (c % 16 < 8 ? ccd0 : ccd1).push_back(c);
  t = ReadCpuTopologyWithKinds(Fixture("amd_2ccd_smt"), {{ccd0, 1, "", 0, 0}, {ccd1, 0, "", 0, 0}});
  EXPECT_TRUE(t.hybrid);
  EXPECT_EQ(t.performance_cores, 8);
  EXPECT_FALSE(ReadCpuTopologyWithKinds(Fixture("amd_2ccd_smt"), {}).hybrid);
}

TEST(CpuTopology, SysfsCoreTypeWhenHwlocHasNoKinds) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "moetune_core_type_root";
  fs::remove_all(root);
  const fs::path cpu = root / "sys/devices/system/cpu";
  fs::create_directories(cpu);
  std::ofstream(cpu / "online") << "0-3\n";
  for (int c = 0; c < 4; ++c) {
    const fs::path topo = cpu / ("cpu" + std::to_string(c)) / "topology";
    fs::create_directories(topo);
    std::ofstream(topo / "core_id") << c << "\n";
    std::ofstream(topo / "thread_siblings_list") << c << "\n";
    std::ofstream(topo / "core_type") << (c < 1 ? "intel_core" : "intel_atom") << "\n";
  }
  const CpuTopology t = ReadCpuTopologyWithKinds(SysRoot(root.string()), {});
  EXPECT_EQ(t.kind_source, "sysfs core_type");
  EXPECT_EQ(t.performance_cores, 1);
  EXPECT_EQ(t.efficiency_cores, 3);
  fs::remove_all(root);
}

TEST(CpuTopology, AmdTwoCcdWithSmt) {
  const CpuTopology t = ReadCpuTopology(Fixture("amd_2ccd_smt"), false);
  EXPECT_EQ(t.vendor, "AuthenticAMD");
  EXPECT_EQ(t.online_cpus, 32);
  EXPECT_EQ(t.logical_cpus, 32);
  EXPECT_EQ(t.physical_cores, 16);
  EXPECT_EQ(t.max_smt, 2);
  EXPECT_FALSE(t.hybrid);
  EXPECT_EQ(t.l3_domains, 2);
  EXPECT_EQ(t.llc_bytes, 32 * 1024 * 1024);
  EXPECT_EQ(Counts(t), (std::vector<int>{16, 32}));
  EXPECT_EQ(t.llama_default_threads, 16);
  EXPECT_FALSE(t.cpu_quota.has_value());  // cfs_quota_us -1 means no quota
}

TEST(CpuTopology, TwoCoreVm) {
  const CpuTopology t = ReadCpuTopology(Fixture("vm_2core"), false);
  EXPECT_EQ(t.logical_cpus, 2);
  EXPECT_EQ(t.physical_cores, 2);
  EXPECT_EQ(t.max_smt, 1);
  EXPECT_EQ(t.llc_bytes, 491520LL * 1024);
  EXPECT_EQ(Counts(t), std::vector<int>{2});
  EXPECT_EQ(t.suggested_threads[0].label, "physical_cores");
  EXPECT_EQ(t.llama_default_threads, 2);
}

TEST(CpuTopology, CgroupLimitedCpusetAndQuota) {
  const CpuTopology t = ReadCpuTopology(Fixture("cgroup_limited"), false);
  EXPECT_EQ(t.online_cpus, 16);
  EXPECT_EQ(t.physical_cores, 8);
  EXPECT_EQ(t.allowed_cpus, (std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(t.logical_cpus, 8);
  EXPECT_EQ(t.allowed_physical_cores, 4);
  ASSERT_TRUE(t.cpu_quota.has_value());
  EXPECT_DOUBLE_EQ(*t.cpu_quota, 6.0);
  // 4 physical cores; 8 logical CPUs are capped by the 6-CPU quota.
  EXPECT_EQ(Counts(t), (std::vector<int>{4, 6}));
  ASSERT_NE(Find(t, "cpu_quota"), nullptr);
  // llama.cpp ignores the cgroup: it counts the whole machine's cores.
  EXPECT_EQ(t.llama_default_threads, 8);
}

TEST(CpuTopology, EmptyRootNamesMissingSources) {
  const CpuTopology t = ReadCpuTopology(SysRoot("/nonexistent-moetune-root"), false);
  EXPECT_EQ(t.logical_cpus, 0);
  EXPECT_FALSE(t.notes.empty());
  const bool names_cpuinfo = std::any_of(t.notes.begin(), t.notes.end(), [](const std::string& n) {
    return n.find("/proc/cpuinfo") != std::string::npos;
  });
  EXPECT_TRUE(names_cpuinfo);
}

TEST(CpuTopology, LiveSystemMatchesAffinity) {
  const CpuTopology t = ReadCpuTopology(SysRoot("/"));
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(t.logical_cpus, CPU_COUNT(&set));
  EXPECT_GE(t.physical_cores, 1);
  EXPECT_FALSE(t.suggested_threads.empty());
}

}  // namespace
}  // namespace moetune
