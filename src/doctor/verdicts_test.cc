#include "doctor/verdicts.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

SysRoot Fixture(const char* name) {
  return SysRoot(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/hw/" + name);
}

const Verdict* Find(const std::vector<Verdict>& v, const std::string& id) {
  for (const auto& x : v) {
    if (x.id == id) return &x;
  }
  return nullptr;
}

// 40 layers of 600 MiB experts; 6 GiB must sit on the GPU whatever the split.
ModelNeeds Model() {
  ModelNeeds m;
  m.name = "test-moe";
  m.n_ctx = 32768;
  m.expert_bytes_by_layer.assign(40, 600 * kMiB);
  m.gpu_fixed_bytes = 6 * kGiB;
  m.host_fixed_bytes = 500 * kMiB;
  return m;
}

MachineProfile GpuMachine(int64_t free_bytes) {
  MachineProfile p;
  GpuInfo g;
  g.vendor = "nvidia";
  g.name = "RTX";
  g.total_bytes = 24 * kGiB;
  g.free_bytes = free_bytes;
  g.used_by_others_bytes = 24 * kGiB - free_bytes;
  g.processes = {{4242, "firefox", 1228 * kMiB}, {4343, "Xorg", 512 * kMiB}};
  g.processes_known = true;
  p.gpus.push_back(g);
  p.cpu = ReadCpuTopology(Fixture("vm_2core"), false);
  p.memory.total_bytes = 64 * kGiB;
  p.memory.available_bytes = 60 * kGiB;
  return p;
}

TEST(FitExperts, SuffixOfLayersOnGpu) {
  const ModelNeeds m = Model();
  // 6 GiB fixed + 10 x 600 MiB = 6 GiB + 5.86 GiB.
  const ExpertFit fit = FitExperts(m, 6 * kGiB + int64_t{10} * 600 * kMiB + 100 * kMiB);
  EXPECT_EQ(fit.moe_layers, 40);
  EXPECT_EQ(fit.gpu_expert_layers, 10);
  EXPECT_EQ(fit.n_cpu_moe, 30);
  EXPECT_EQ(fit.cpu_expert_bytes, int64_t{30} * 600 * kMiB);
  EXPECT_TRUE(fit.fixed_part_fits);
  const ExpertFit none = FitExperts(m, 5 * kGiB);
  EXPECT_FALSE(none.fixed_part_fits);
  EXPECT_EQ(none.n_cpu_moe, 40);
}

TEST(Verdicts, ProgramsHoldingVramBecomeExpertLayers) {
  VerdictInputs in;
  in.profile = GpuMachine(20 * kGiB);
  in.model = Model();
  const auto v = MakeVerdicts(in);
  const Verdict* held = Find(v, "vram_held_gpu0");
  ASSERT_NE(held, nullptr);
  // 20 GiB free - 1 GiB margin - 6 GiB fixed = 13 GiB -> 22 layers of 600 MiB;
  // + 1.70 GiB held by the two programs -> 25 layers: 3 more.
  EXPECT_NE(held->title.find("2 programs hold 1.70 GiB of VRAM"), std::string::npos) << held->title;
  EXPECT_NE(held->title.find("firefox"), std::string::npos);
  EXPECT_NE(held->title.find("frees room for 3 more expert layers"), std::string::npos)
      << held->title;
  EXPECT_NE(held->title.find("--n-cpu-moe 18 -> 15"), std::string::npos) << held->title;
  EXPECT_EQ(held->severity, "warning");
}

TEST(Verdicts, RamShortIsCriticalAndFirst) {
  VerdictInputs in;
  in.profile = GpuMachine(20 * kGiB);
  in.profile.memory.available_bytes = 8 * kGiB;  // 18 x 600 MiB + 500 MiB = 11 GiB needed
  in.model = Model();
  const auto v = MakeVerdicts(in);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.front().id, "ram_short");
  EXPECT_EQ(v.front().severity, "critical");
  EXPECT_NE(v.front().detail.find("--n-cpu-moe 18"), std::string::npos);
  for (size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i - 1].impact, v[i].impact);
}

TEST(Verdicts, NoGpuAndTrapsAndThreads) {
  VerdictInputs in;
  in.profile.cpu = ReadCpuTopology(Fixture("cgroup_limited"), false);
  in.profile.memory.total_bytes = 128 * kGiB;
  in.profile.memory.available_bytes = 100 * kGiB;
  in.traps.push_back({"unified_memory", 95, "GGML_CUDA_ENABLE_UNIFIED_MEMORY is set", "d", "f"});
  const auto v = MakeVerdicts(in);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v.front().id, "unified_memory");
  EXPECT_NE(Find(v, "no_gpu"), nullptr);
  const Verdict* t = Find(v, "llama_threads_exceed_allowed");
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t->title.find("8 threads"), std::string::npos) << t->title;
  EXPECT_NE(t->title.find("only 6 CPUs"), std::string::npos) << t->title;
  EXPECT_EQ(t->fix, "always pass -t 4");
}

TEST(Verdicts, HybridCpuListsCandidates) {
  VerdictInputs in;
  in.profile.cpu = ReadCpuTopology(Fixture("intel_hybrid_6p8e"), false);
  const auto v = MakeVerdicts(in);
  const Verdict* h = Find(v, "hybrid_cpu");
  ASSERT_NE(h, nullptr);
  EXPECT_NE(h->fix.find("14 (physical_cores), 6 (performance_cores), 20 (logical_cpus)"),
            std::string::npos)
      << h->fix;
}

}  // namespace
}  // namespace moetune
