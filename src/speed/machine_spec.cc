#include "speed/machine_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "speed/presets.h"
#include "util/units.h"

namespace moetune {

const char* SpillModeName(SpillMode mode) {
  return mode == SpillMode::kSilent ? "silent" : "strict";
}

int64_t MachineSpec::VramBudget() const {
  if (devices.empty()) return 0;
  return std::max<int64_t>(0, devices.front().vram_free - reserve);
}

std::vector<AcceleratorSpec> MachineSpec::SingleDevices() const {
  std::vector<AcceleratorSpec> out;
  for (const AcceleratorSpec& d : devices) {
    const int n = std::max(1, d.count);
    AcceleratorSpec one = d;
    one.count = 1;
    one.vram_total = d.vram_total / n;
    one.vram_free = d.vram_free / n;
    one.runtime_bytes = d.runtime_bytes / n;
    for (int i = 0; i < n; ++i) out.push_back(one);
  }
  return out;
}

std::vector<std::string> MachineSpec::DeviceNames() const {
  // llama.cpp names its devices per backend, each counted from 0: CUDA0,
  // CUDA1, ..., RPC0, RPC1 (the ggml backend registry; moetune's plans and
  // checks over RPC devices read these names back from the engine).
  std::vector<std::string> out;
  int gpus = 0, rpcs = 0;
  for (const AcceleratorSpec& d : SingleDevices()) {
    out.push_back(d.kind == AcceleratorKind::kRpcCpu ? fmt::format("RPC{}", rpcs++)
                                                     : fmt::format("CUDA{}", gpus++));
  }
  return out;
}

std::string MachineSpec::Describe() const {
  std::string gpu = devices.empty() ? "no GPU" : "";
  for (const AcceleratorSpec& d : devices) {
    gpu += fmt::format("{}{}{} ({} free, {:.0f} GB/s{})", gpu.empty() ? "" : " + ",
                       d.count > 1 ? fmt::format("{}x ", d.count) : "", d.name,
                       FormatBytes(Bytes(d.vram_free)), d.mem_bw_gbps,
                       d.net_gbps > 0 ? fmt::format(", {:g} GB/s link", d.net_gbps) : "");
  }
  std::string cores = fmt::format("{}P", cpu.p_cores);
  if (cpu.e_cores > 0) cores += fmt::format("+{}E", cpu.e_cores);
  if (cpu.smt > 1) cores += fmt::format("/smt{}", cpu.smt);
  return fmt::format("{} + RAM {:.0f} GB/s + CPU {}{}", gpu, ram.read_gbps, cores,
                     has_gpu() && spill == SpillMode::kSilent ? " (silent spill)" : "");
}

CpuTopology SimulatedCpuTopology(const CpuSpec& cpu) {
  CpuTopology t;
  t.model_name = cpu.name;
  t.vendor = cpu.e_cores > 0 ? "GenuineIntel" : "";
  t.sockets = 1;
  const int p = std::max(1, cpu.p_cores), e = std::max(0, cpu.e_cores);
  const int smt = std::max(1, cpu.smt);
  int next = 0;
  for (int i = 0; i < p + e; ++i) {
    CpuCore core;
    core.core_id = i;
    core.kind = i < p ? CoreKind::kPerformance : CoreKind::kEfficiency;
    for (int k = 0; k < (i < p ? smt : 1); ++k) core.cpus.push_back(next++);
    t.cores.push_back(core);
  }
  t.physical_cores = t.allowed_physical_cores = p + e;
  t.online_cpus = t.possible_cpus = t.logical_cpus = next;
  for (int c = 0; c < next; ++c) t.allowed_cpus.push_back(c);
  t.max_smt = smt;
  t.hybrid = e > 0;
  t.performance_cores = t.allowed_performance_cores = e > 0 ? p : 0;
  t.efficiency_cores = e;
  t.llc_bytes = cpu.llc_bytes;
  t.l3_domains = 1;
  t.cpu_quota = cpu.quota;
  t.kind_source = "what-if CPU";
  if (t.hybrid) {
    // common_cpu_get_num_math(): pins to CPUs 0..n-1 in turn, skips E-cores, and
    // after counting a P-core skips the next CPU number (its assumed SMT sibling).
    int counted = 0;
    for (int c = 0; c < next; ++c) {
      if (c >= p * smt) continue;
      ++c;
      ++counted;
    }
    t.llama_default_threads = counted;
    t.llama_default_reason =
        "hybrid CPU: P-cores (common_cpu_get_num_math, llama.cpp common/common.cpp)";
  } else {
    t.llama_default_threads = p;
    t.llama_default_reason =
        "physical cores (common_cpu_get_num_physical_cores, llama.cpp common/common.cpp)";
  }
  t.suggested_threads = SuggestThreads(t);
  return t;
}

void PcieLinkRates(int generation, int lanes, double* pinned_gbps, double* pageable_gbps) {
  // Line rate per lane after encoding (GB/s): gen1 0.25, gen2 0.5, gen3 0.985,
  // gen4 1.969, gen5 3.938, gen6 ~7.9 (PCI-SIG specifications).
  static const double kPerLane[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938, 7.877};
  const int g = std::clamp(generation, 1, 6);
  const double line = kPerLane[g] * std::max(1, lanes);
  // Measured host-to-device copies reach ~80% of the line rate up to gen 4
  // (gen 4 x16: 24-26 GB/s pinned) and ~89% on gen 5 (x16: ~56 GB/s); pageable
  // copies go through a staging buffer (gen 4 x16: ~19.6 GB/s, 78% of pinned).
  *pinned_gbps = line * (g >= 5 ? 0.89 : 0.80);
  *pageable_gbps = *pinned_gbps * 0.78;
}

MachineSpec DefaultMachineSpec() {
  MachineSpec s;
  s.label = "generic machine (no profile)";
  s.cpu.name = "generic 4-core CPU";
  s.cpu.p_cores = 4;
  s.cpu.source = "assumed: no machine profile (run `moetune doctor`)";
  s.ram.name = "generic RAM";
  s.ram.read_gbps = 40;
  s.ram.source = "assumed: dual-channel DDR4-3200 typical read";
  return s;
}

namespace {

// The device of the profile's GPUs named like `g`, all of them together.
AcceleratorSpec DeviceFromProfile(const MachineProfile& p, const GpuInfo& g,
                                  std::vector<std::string>* notes) {
  AcceleratorSpec a;
  a.name = g.name;
  a.count = 0;
  for (const auto& o : p.gpus) {
    if (o.name != g.name) continue;
    ++a.count;
    a.vram_total += o.total_bytes;
    a.vram_free += o.free_bytes;
  }
  // NVML's free VRAM is read before llama.cpp's context exists.
  a.runtime_bytes = kCudaRuntimeBytes * a.count;
  MachineSpec probe;
  const bool known = GpuPresetByMarketingName(g.name, &probe);
  a.mem_bw_gbps = g.peak_bandwidth_gbps > 0 ? g.peak_bandwidth_gbps
                                            : (known ? probe.accel()->mem_bw_gbps : 300.0);
  a.fp16_tflops = known ? probe.accel()->fp16_tflops : a.mem_bw_gbps * 0.2;
  const int gen = g.pcie_gen_max > 0 ? g.pcie_gen_max : 4;
  const int width = g.pcie_width_max > 0 ? g.pcie_width_max : 16;
  PcieLinkRates(gen, width, &a.link_gbps, &a.link_pageable_gbps);
  a.source = fmt::format("doctor profile ({}); FP16 throughput {}", g.memory_query,
                         known ? "from the matching preset"
                               : "estimated as 0.2 TFLOPS per GB/s (no preset matches the name)");
  if (!known) notes->push_back("GPU '" + g.name + "' matches no preset: its compute is estimated");
  return a;
}

}  // namespace

MachineSpec MachineSpecFromProfile(const MachineProfile& p) {
  MachineSpec s = DefaultMachineSpec();
  s.label = fmt::format("this machine ({}, doctor profile of {})", p.hostname, p.created_at);
  // CPU: the cores this process may use.
  const CpuTopology& c = p.cpu;
  s.cpu.name = c.model_name.empty() ? "this CPU" : c.model_name;
  const int physical =
      std::max(1, c.allowed_physical_cores > 0 ? c.allowed_physical_cores : c.physical_cores);
  if (c.hybrid && c.allowed_performance_cores > 0) {
    s.cpu.p_cores = c.allowed_performance_cores;
    s.cpu.e_cores = std::max(0, physical - c.allowed_performance_cores);
  } else {
    s.cpu.p_cores = physical;
    s.cpu.e_cores = 0;
  }
  const int logical = std::max(1, c.logical_cpus);
  s.cpu.smt = logical > physical ? std::max(1, c.max_smt) : 1;
  s.cpu.llc_bytes = c.llc_bytes;
  s.cpu.quota = c.cpu_quota;
  s.cpu.source =
      "doctor profile (CPU topology); per-core peak assumed 96 GFLOPS (3 GHz x 32 "
      "FLOP/cycle) until `moetune calibrate` pins the efficiencies";
  // RAM: the doctor's measured read bandwidth.
  s.ram.name = "this machine's RAM";
  s.ram.available = p.memory.available_bytes;
  if (p.bandwidth && p.bandwidth->read_gbps > 0) {
    s.ram.read_gbps = p.bandwidth->read_gbps;
    s.ram.source = fmt::format("doctor: measured read bandwidth, {} threads", p.bandwidth->threads);
  } else {
    s.ram.source = "assumed 40 GB/s: the doctor's profile has no bandwidth measurement";
  }
  // GPU: the first one (NVML order = CUDA order); several identical cards add up.
  // One device per GPU model, in the profile's order: identical cards are one
  // device with a count (their memory summed), the others follow, each with
  // its own slot's PCIe link.
  std::vector<std::string> seen;
  for (const GpuInfo& g : p.gpus) {
    if (std::find(seen.begin(), seen.end(), g.name) != seen.end()) continue;
    seen.push_back(g.name);
    s.devices.push_back(DeviceFromProfile(p, g, &s.notes));
  }
  return s;
}

}  // namespace moetune
