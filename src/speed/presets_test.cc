#include "speed/presets.h"

#include <gtest/gtest.h>

#include <set>

namespace moetune {
namespace {

TEST(MachinePresets, GpuPresetSetsVendorFigures) {
  MachineSpec s = DefaultMachineSpec();
  ASSERT_TRUE(ApplyMachinePreset("rtx4070-12g", &s).ok());
  ASSERT_TRUE(s.has_gpu());
  EXPECT_EQ(s.accel()->vram_total, int64_t{12} << 30);
  EXPECT_LT(s.accel()->vram_free, s.accel()->vram_total);
  EXPECT_DOUBLE_EQ(s.accel()->mem_bw_gbps, 504);
  EXPECT_GT(s.accel()->link_gbps, s.accel()->link_pageable_gbps);
  // N identical cards add up their memory.
  ASSERT_TRUE(ApplyMachinePreset("2xRTX5090-32G", &s).ok());
  EXPECT_EQ(s.accel()->count, 2);
  EXPECT_EQ(s.accel()->vram_total, int64_t{64} << 30);
  // no-gpu removes it again.
  ASSERT_TRUE(ApplyMachinePreset("no-gpu", &s).ok());
  EXPECT_FALSE(s.has_gpu());
}

TEST(MachinePresets, ListAppliesInOrderAndUnknownNamesListThePresets) {
  MachineSpec s = DefaultMachineSpec();
  ASSERT_TRUE(ApplyMachinePresets("rtx4070-12g,ddr5-6000-2ch,6p8e", &s).ok());
  EXPECT_DOUBLE_EQ(s.ram.theoretical_gbps, 96);
  EXPECT_EQ(s.cpu.p_cores, 6);
  EXPECT_EQ(s.cpu.e_cores, 8);
  EXPECT_EQ(s.cpu.smt, 2);
  EXPECT_LT(s.cpu.e_core_relative, 1.0);
  auto bad = ApplyMachinePresets("rtx4070-12g,rtx9999", &s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("rtx9999"), std::string::npos);
  EXPECT_NE(bad.error().message().find("rtx4090-24g"), std::string::npos);
  EXPECT_FALSE(ApplyMachinePresets("rtx4070-12g,,6p8e", &s).ok());
}

TEST(MachinePresets, EveryPresetAppliesAndCitesASource) {
  const auto presets = MachinePresets();
  EXPECT_GE(presets.size(), 25u);
  for (const auto& p : presets) {
    MachineSpec s = DefaultMachineSpec();
    EXPECT_TRUE(ApplyMachinePreset(p.name, &s).ok()) << p.name;
    EXPECT_FALSE(p.source.empty()) << p.name;
    EXPECT_FALSE(p.figures.empty()) << p.name;
  }
}

TEST(MachinePresets, DriverNamesMatchTheLongestMarketingName) {
  MachineSpec s;
  ASSERT_TRUE(GpuPresetByMarketingName("NVIDIA GeForce RTX 4070 Ti SUPER", &s));
  EXPECT_DOUBLE_EQ(s.accel()->mem_bw_gbps, 672);
  ASSERT_TRUE(GpuPresetByMarketingName("NVIDIA GeForce RTX 4070", &s));
  EXPECT_DOUBLE_EQ(s.accel()->mem_bw_gbps, 504);
  EXPECT_FALSE(GpuPresetByMarketingName("Radeon RX 7900 XTX", &s));
}

TEST(WhatIfFlags, BandwidthParsesUnits) {
  EXPECT_DOUBLE_EQ(*ParseBandwidthGbps("504GB/s"), 504);
  EXPECT_DOUBLE_EQ(*ParseBandwidthGbps("25 GB/s"), 25);
  EXPECT_DOUBLE_EQ(*ParseBandwidthGbps("1.8TB/s"), 1800);
  EXPECT_DOUBLE_EQ(*ParseBandwidthGbps("900MB/s"), 0.9);
  EXPECT_DOUBLE_EQ(*ParseBandwidthGbps("40"), 40);
  for (const char* bad : {"", "fast", "-3GB/s", "0", "12 parsecs", "nanGB/s"})
    EXPECT_FALSE(ParseBandwidthGbps(bad).ok()) << bad;
}

TEST(WhatIfFlags, CpuShapes) {
  CpuSpec c;
  ASSERT_TRUE(ParseCpuShape("6P+8E", &c).ok());
  EXPECT_EQ(c.p_cores, 6);
  EXPECT_EQ(c.e_cores, 8);
  EXPECT_EQ(c.smt, 1);
  ASSERT_TRUE(ParseCpuShape("8P+16E/smt2", &c).ok());
  EXPECT_EQ(c.LogicalCpus(), 32);
  ASSERT_TRUE(ParseCpuShape("16C/smt2", &c).ok());
  EXPECT_EQ(c.p_cores, 16);
  EXPECT_EQ(c.e_cores, 0);
  EXPECT_EQ(c.smt, 2);
  ASSERT_TRUE(ParseCpuShape("8c16t", &c).ok());
  EXPECT_EQ(c.smt, 2);
  ASSERT_TRUE(ParseCpuShape("4", &c).ok());
  EXPECT_EQ(c.p_cores, 4);
  // "0c8t" divided by zero cores (SIGFPE) before it was refused.
  for (const char* bad : {"", "P", "6P+", "6P+8X", "8c15t", "6P/smt", "0", "6P+8E/smt9", "0c8t"})
    EXPECT_FALSE(ParseCpuShape(bad, &c).ok()) << bad;
}

TEST(WhatIfFlags, SpillModes) {
  EXPECT_EQ(*ParseSpillMode("silent"), SpillMode::kSilent);
  EXPECT_EQ(*ParseSpillMode("strict"), SpillMode::kStrict);
  EXPECT_FALSE(ParseSpillMode("maybe").ok());
}

TEST(SimulatedCpuTopology, HybridCandidatesAndLlamaDefault) {
  MachineSpec m = DefaultMachineSpec();
  ASSERT_TRUE(ApplyMachinePresets("8p16e", &m).ok());
  const CpuTopology t = SimulatedCpuTopology(m.cpu);
  EXPECT_TRUE(t.hybrid);
  EXPECT_EQ(t.physical_cores, 24);
  EXPECT_EQ(t.logical_cpus, 32);  // 8 P-cores x 2 + 16 E-cores
  // llama.cpp's default on a hybrid CPU: the P-cores (common_cpu_get_num_math).
  EXPECT_EQ(t.llama_default_threads, 8);
  std::set<int> suggested;
  for (const auto& s : t.suggested_threads) suggested.insert(s.threads);
  EXPECT_EQ(suggested, (std::set<int>{8, 24, 32}));
}

TEST(SimulatedCpuTopology, PlainCpuWithSmtAndQuota) {
  MachineSpec m = DefaultMachineSpec();
  ASSERT_TRUE(ApplyMachinePresets("8c16t", &m).ok());
  CpuTopology t = SimulatedCpuTopology(m.cpu);
  EXPECT_FALSE(t.hybrid);
  EXPECT_EQ(t.llama_default_threads, 8);  // physical cores
  std::set<int> suggested;
  for (const auto& s : t.suggested_threads) suggested.insert(s.threads);
  EXPECT_EQ(suggested, (std::set<int>{8, 16}));
  m.cpu.quota = 6;
  t = SimulatedCpuTopology(m.cpu);
  suggested.clear();
  for (const auto& s : t.suggested_threads) suggested.insert(s.threads);
  EXPECT_EQ(suggested, (std::set<int>{6}));
}

}  // namespace
}  // namespace moetune
