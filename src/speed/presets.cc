#include "speed/presets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "util/units.h"

namespace moetune {
namespace {

// GPU figures: memory size, bandwidth and bus from NVIDIA's product specification
// pages (nvidia.com/geforce, "Specs"); dense FP16 tensor throughput with FP16
// accumulate from the architecture whitepapers (Turing TU102, Ampere GA102, Ada
// AD102 appendix tables) or, for Blackwell GeForce, NVIDIA's "AI TOPS" (FP4,
// sparse) divided by 8 (FP4 -> FP8 -> FP16, sparse -> dense). Tensor-core counts x
// FMA per clock x boost clock reproduce each figure.
struct GpuRow {
  const char* name;
  const char* title;
  const char* marketing;  // substring of the driver's device name
  double vram_gib;
  double bw_gbps;
  double fp16_tflops;
  int pcie_gen;
  int lanes;
  const char* source;
};

constexpr const char* kTuring = "nvidia.com RTX 2080 specs; Turing TU102 whitepaper (FP16 tensor)";
constexpr const char* kAmpere =
    "nvidia.com RTX 30 series specs; Ampere GA102 whitepaper (FP16 tensor)";
constexpr const char* kAda =
    "nvidia.com RTX 40 series specs; Ada AD102 whitepaper appendix (FP16 tensor)";
constexpr const char* kBlackwell =
    "nvidia.com RTX 50 series specs; FP16 tensor = AI TOPS (FP4 sparse) / 8";
constexpr const char* kHopper = "nvidia.com H100 PCIe datasheet";

const GpuRow kGpus[] = {
    {"rtx2080-8g", "NVIDIA GeForce RTX 2080 8 GB", "RTX 2080", 8, 448, 80.5, 3, 16, kTuring},
    {"rtx3060-12g", "NVIDIA GeForce RTX 3060 12 GB", "RTX 3060", 12, 360, 51.2, 4, 16, kAmpere},
    {"rtx3080-10g", "NVIDIA GeForce RTX 3080 10 GB", "RTX 3080", 10, 760, 119, 4, 16, kAmpere},
    {"rtx3090-24g", "NVIDIA GeForce RTX 3090 24 GB", "RTX 3090", 24, 936, 142, 4, 16, kAmpere},
    {"rtx4060-8g", "NVIDIA GeForce RTX 4060 8 GB", "RTX 4060", 8, 272, 60.5, 4, 8, kAda},
    {"rtx4060ti-16g", "NVIDIA GeForce RTX 4060 Ti 16 GB", "RTX 4060 Ti", 16, 288, 88.4, 4, 8, kAda},
    {"rtx4070-12g", "NVIDIA GeForce RTX 4070 12 GB", "RTX 4070", 12, 504, 116.8, 4, 16, kAda},
    {"rtx4070tis-16g", "NVIDIA GeForce RTX 4070 Ti SUPER 16 GB", "RTX 4070 Ti SUPER", 16, 672,
     176.4, 4, 16, kAda},
    {"rtx4080-16g", "NVIDIA GeForce RTX 4080 16 GB", "RTX 4080", 16, 716.8, 194.9, 4, 16, kAda},
    {"rtx4090-24g", "NVIDIA GeForce RTX 4090 24 GB", "RTX 4090", 24, 1008, 330.3, 4, 16, kAda},
    {"rtx5060ti-16g", "NVIDIA GeForce RTX 5060 Ti 16 GB", "RTX 5060 Ti", 16, 448, 94.9, 5, 8,
     kBlackwell},
    {"rtx5070-12g", "NVIDIA GeForce RTX 5070 12 GB", "RTX 5070", 12, 672, 123.5, 5, 16, kBlackwell},
    {"rtx5070ti-16g", "NVIDIA GeForce RTX 5070 Ti 16 GB", "RTX 5070 Ti", 16, 896, 175.8, 5, 16,
     kBlackwell},
    {"rtx5080-16g", "NVIDIA GeForce RTX 5080 16 GB", "RTX 5080", 16, 960, 225.1, 5, 16, kBlackwell},
    {"rtx5090-32g", "NVIDIA GeForce RTX 5090 32 GB", "RTX 5090", 32, 1792, 419, 5, 16, kBlackwell},
    {"h100-80g", "NVIDIA H100 PCIe 80 GB", "H100", 80, 2000, 756, 5, 16, kHopper},
};

// RAM: theoretical = MT/s x 8 bytes x channels (JEDEC). Typical measured read:
// dual-channel DDR4-3200 reads ~40-46 GB/s in practice (84% of 51.2); more
// channels and DDR5 lose more to controller and fabric limits (assumed 80% for
// quad-channel DDR4, 75% for DDR5 desktop, 70% for 8/12-channel servers).
struct RamRow {
  const char* name;
  const char* title;
  int mts;
  int channels;
  double typical_fraction;
};

const RamRow kRams[] = {
    {"ddr4-2666-2ch", "DDR4-2666, 2 channels", 2666, 2, 0.84},
    {"ddr4-3200-2ch", "DDR4-3200, 2 channels", 3200, 2, 0.84},
    {"ddr4-3600-2ch", "DDR4-3600, 2 channels", 3600, 2, 0.84},
    {"ddr4-3200-4ch", "DDR4-3200, 4 channels (HEDT)", 3200, 4, 0.80},
    {"ddr4-3200-8ch", "DDR4-3200, 8 channels (server)", 3200, 8, 0.70},
    {"ddr5-4800-2ch", "DDR5-4800, 2 channels", 4800, 2, 0.75},
    {"ddr5-5600-2ch", "DDR5-5600, 2 channels", 5600, 2, 0.75},
    {"ddr5-6000-2ch", "DDR5-6000, 2 channels", 6000, 2, 0.75},
    {"ddr5-6400-2ch", "DDR5-6400, 2 channels", 6400, 2, 0.75},
    {"ddr5-4800-8ch", "DDR5-4800, 8 channels (server)", 4800, 8, 0.70},
    {"ddr5-4800-12ch", "DDR5-4800, 12 channels (server)", 4800, 12, 0.70},
};

// CPUs: core counts from the vendors' product pages; per-core f32 peak = all-core
// clock x FLOP/cycle (Zen 4 and Golden/Raptor Cove: two 256-bit FMA pipes = 32
// f32 FLOP/cycle; Gracemont E-cores: two 128-bit FMA pipes = 16).
struct CpuRow {
  const char* name;
  const char* title;
  int p, e, smt;
  double p_ghz, e_ghz;
  int64_t llc_mib;
  const char* source;
};

const CpuRow kCpus[] = {
    {"4c8t", "4 cores / 8 threads (generic desktop)", 4, 0, 2, 4.5, 0, 16, "assumed Zen 4-class"},
    {"6c12t", "AMD Ryzen 5 7600 class", 6, 0, 2, 4.9, 0, 32, "amd.com Ryzen 5 7600"},
    {"8c16t", "AMD Ryzen 7 7700X class", 8, 0, 2, 5.0, 0, 32, "amd.com Ryzen 7 7700X"},
    {"12c24t", "AMD Ryzen 9 7900X class", 12, 0, 2, 5.0, 0, 64, "amd.com Ryzen 9 7900X"},
    {"16c32t", "AMD Ryzen 9 7950X class", 16, 0, 2, 5.0, 0, 64, "amd.com Ryzen 9 7950X"},
    {"6p8e", "Intel Core i5-13600K class", 6, 8, 2, 5.1, 3.9, 24, "intel.com Core i5-13600K"},
    {"8p8e", "Intel Core i7-13700K class", 8, 8, 2, 5.3, 4.2, 30, "intel.com Core i7-13700K"},
    {"8p16e", "Intel Core i9-13900K class", 8, 16, 2, 5.5, 4.3, 36, "intel.com Core i9-13900K"},
    {"32c64t", "AMD EPYC 9354 class (server)", 32, 0, 2, 3.5, 0, 256, "amd.com EPYC 9354"},
};

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void ApplyGpu(const GpuRow& g, int count, MachineSpec* spec) {
  AcceleratorSpec a;
  a.kind = AcceleratorKind::kGpu;
  a.name = g.title;
  a.count = count;
  a.vram_total = static_cast<int64_t>(g.vram_gib * 1073741824.0) * count;
  // Free VRAM on an idle desktop before llama.cpp starts: the display and the
  // driver hold 6-8% of a consumer card. llama.cpp reports, after creating its
  // own CUDA context (~0.3 GiB), 15035 MiB free on a 16 GB RTX 4080 SUPER (91.8%,
  // github.com/ggml-org/llama.cpp/issues/13729), 15055 MiB on a 16 GB RTX 5060 Ti
  // (91.9%, github.com/lmstudio-ai/lmstudio-bug-tracker/issues/1360) and 11013 MiB
  // on a 12 GB RTX 5070 (89.6%, github.com/antirez/llama.cpp-deepseek-v4-flash
  // issue 11), all on Windows desktops: 93% before the context. The engine's
  // runtime (kCudaRuntimeBytes) comes on top.
  a.vram_free = static_cast<int64_t>(static_cast<double>(a.vram_total) * 0.93);
  a.runtime_bytes = kCudaRuntimeBytes * count;
  a.mem_bw_gbps = g.bw_gbps;
  a.fp16_tflops = g.fp16_tflops;
  PcieLinkRates(g.pcie_gen, g.lanes, &a.link_gbps, &a.link_pageable_gbps);
  a.source = g.source;
  spec->devices = {a};
}

void ApplyRam(const RamRow& r, MachineSpec* spec) {
  spec->ram.name = r.title;
  spec->ram.available = 0;  // a memory kind says nothing about its size: unknown
  spec->ram.theoretical_gbps = r.mts * 8.0 * r.channels / 1000.0;
  spec->ram.read_gbps = spec->ram.theoretical_gbps * r.typical_fraction;
  spec->ram.source = fmt::format(
      "theoretical {:.1f} GB/s (JEDEC transfer rate x 8 B x {} ch), "
      "typical read {:.0f}%",
      spec->ram.theoretical_gbps, r.channels, r.typical_fraction * 100);
}

void ApplyCpu(const CpuRow& c, MachineSpec* spec) {
  spec->cpu.name = c.title;
  spec->cpu.p_cores = c.p;
  spec->cpu.e_cores = c.e;
  spec->cpu.smt = c.smt;
  spec->cpu.core_peak_gflops = c.p_ghz * 32;
  spec->cpu.e_core_relative = c.e > 0 ? (c.e_ghz * 16) / (c.p_ghz * 32) : 0.45;
  spec->cpu.llc_bytes = c.llc_mib << 20;
  spec->cpu.quota.reset();
  spec->cpu.source = c.source;
}

void ApplyRpcCpu(MachineSpec* spec) {
  AcceleratorSpec a;
  a.kind = AcceleratorKind::kRpcCpu;
  a.name = "RPC0 (ggml-rpc-server on this CPU, 1 thread)";
  a.rpc_threads = 1;
  // The RPC device reports the server machine's RAM as its free memory.
  a.vram_total = spec->ram.available > 0 ? spec->ram.available : int64_t{16} << 30;
  a.vram_free = a.vram_total;
  a.mem_bw_gbps = spec->ram.read_gbps;
  a.fp16_tflops = 0;  // computed by the CPU model with rpc_threads
  // Loopback TCP: every tensor copy is a socket write + read; assumed 2 GB/s until
  // `moetune calibrate --rpc` measures it.
  a.link_gbps = 2.0;
  a.link_pageable_gbps = 2.0;
  a.source = "this machine's CPU and RAM; loopback link assumed 2 GB/s";
  spec->devices = {a};
}

// An RPC host on the network: ggml-rpc-server with one thread per core on a
// machine like this one's CPU and RAM (as described so far), behind Ethernet.
// TCP payload over Ethernet with a 1500-byte MTU is 1448 of every 1538 bytes
// on the wire (94%: 12 B timestamps option, 66 B headers, preamble and gap);
// round trips are those of one switched LAN hop.
struct RpcHostRow {
  const char* name;
  const char* title;
  double line_gbit;
  double rtt_us;
};
const RpcHostRow kRpcHosts[] = {
    {"rpc-1gbe", "llama.cpp RPC host (ggml-rpc-server) over 1 Gigabit Ethernet", 1, 200},
    {"rpc-10gbe", "llama.cpp RPC host (ggml-rpc-server) over 10 Gigabit Ethernet", 10, 60},
};

void ApplyRpcHost(const RpcHostRow& r, MachineSpec* spec) {
  ApplyRpcCpu(spec);
  AcceleratorSpec& a = spec->devices.front();
  a.name = fmt::format("RPC host over {:g} GbE ({}P CPU, {:.0f} GB/s RAM)", r.line_gbit,
                       spec->cpu.p_cores, spec->ram.read_gbps);
  a.rpc_cpu = spec->cpu;
  a.rpc_threads = std::max(1, spec->cpu.p_cores);
  a.net_gbps = r.line_gbit / 8 * 1448.0 / 1538.0;
  a.net_rtt_us = r.rtt_us;
  a.source = fmt::format(
      "a host with this machine's CPU and RAM; {:g} Gbit/s Ethernet, TCP payload 94% of the line "
      "rate (1500-byte MTU), {:g} us round trip (one switched hop)",
      r.line_gbit, r.rtt_us);
}

}  // namespace

const char* PresetKindName(PresetKind kind) {
  switch (kind) {
    case PresetKind::kGpu:
      return "gpu";
    case PresetKind::kMemory:
      return "memory";
    case PresetKind::kCpu:
      return "cpu";
    case PresetKind::kOther:
      break;
  }
  return "other";
}

std::vector<MachinePreset> MachinePresets() {
  std::vector<MachinePreset> out;
  for (const auto& g : kGpus) {
    double pinned = 0, pageable = 0;
    PcieLinkRates(g.pcie_gen, g.lanes, &pinned, &pageable);
    out.push_back(
        {g.name, PresetKind::kGpu, g.title,
         fmt::format("{:g} GiB, {:g} GB/s, {:g} FP16 TFLOPS, PCIe {}.0 x{} ({:.1f} GB/s "
                     "pinned, {:.1f} pageable)",
                     g.vram_gib, g.bw_gbps, g.fp16_tflops, g.pcie_gen, g.lanes, pinned, pageable),
         g.source});
  }
  for (const auto& r : kRams) {
    MachineSpec s;
    ApplyRam(r, &s);
    out.push_back({r.name, PresetKind::kMemory, r.title,
                   fmt::format("{:.1f} GB/s theoretical, {:.0f} GB/s typical read",
                               s.ram.theoretical_gbps, s.ram.read_gbps),
                   s.ram.source});
  }
  for (const auto& c : kCpus) {
    std::string shape = fmt::format("{}P", c.p);
    if (c.e > 0) shape += fmt::format("+{}E", c.e);
    out.push_back(
        {c.name, PresetKind::kCpu, c.title,
         fmt::format(
             "{} /smt{}, {:.0f} GFLOPS f32 peak per P-core{}, LLC {} MiB", shape, c.smt,
             c.p_ghz * 32,
             c.e > 0 ? fmt::format(", E-core {:.2f}x", (c.e_ghz * 16) / (c.p_ghz * 32)) : "",
             c.llc_mib),
         std::string(c.source) + "; FLOP/cycle from the core's FMA pipes"});
  }
  out.push_back({"rpc-cpu", PresetKind::kOther,
                 "llama.cpp RPC device (ggml-rpc-server -t 1) on this CPU over loopback",
                 "memory = this machine's RAM, compute = one CPU thread, link ~2 GB/s",
                 "this machine; `moetune calibrate --measurements` on RPC runs pins the link"});
  for (const auto& r : kRpcHosts) {
    out.push_back({r.name, PresetKind::kOther, r.title,
                   fmt::format("memory and compute = this machine's RAM and cores, link {:.3g} "
                               "GB/s payload, {:g} us round trip",
                               r.line_gbit / 8 * 1448.0 / 1538.0, r.rtt_us),
                   "Ethernet line rate; TCP payload share with a 1500-byte MTU"});
  }
  out.push_back(
      {"no-gpu", PresetKind::kOther, "no accelerator (CPU only)", "every layer on the CPU", "-"});
  return out;
}

bool GpuPresetByMarketingName(std::string_view gpu_name, MachineSpec* spec) {
  // Longest matching marketing name wins ("RTX 4070 Ti SUPER" over "RTX 4070").
  const GpuRow* best = nullptr;
  const std::string lower = Lower(gpu_name);
  for (const auto& g : kGpus) {
    if (lower.find(Lower(g.marketing)) == std::string::npos) continue;
    if (best == nullptr ||
        std::string_view(g.marketing).size() > std::string_view(best->marketing).size())
      best = &g;
  }
  if (best == nullptr) return false;
  ApplyGpu(*best, 1, spec);
  return true;
}

Status ApplyMachinePreset(std::string_view name_in, MachineSpec* spec) {
  const std::string name = Lower(name_in);
  int count = 1;
  std::string_view base = name;
  if (const size_t x = name.find('x');
      x != std::string::npos && x > 0 && x < 3 &&
      std::all_of(name.begin(), name.begin() + static_cast<long>(x),
                  [](char c) { return c >= '0' && c <= '9'; })) {
    count = std::stoi(name.substr(0, x));
    base = std::string_view(name).substr(x + 1);
  }
  for (const auto& g : kGpus) {
    if (base == g.name) {
      if (count < 1 || count > 16)
        return Error(ErrorKind::kInvalidArgument,
                     fmt::format("'{}': between 1 and 16 GPUs of one kind", name_in));
      ApplyGpu(g, count, spec);
      return OkStatus();
    }
  }
  if (count == 1) {
    for (const auto& r : kRams) {
      if (name == r.name) {
        ApplyRam(r, spec);
        return OkStatus();
      }
    }
    for (const auto& c : kCpus) {
      if (name == c.name) {
        ApplyCpu(c, spec);
        return OkStatus();
      }
    }
    if (name == "rpc-cpu") {
      ApplyRpcCpu(spec);
      return OkStatus();
    }
    for (const auto& r : kRpcHosts) {
      if (name == r.name) {
        ApplyRpcHost(r, spec);
        return OkStatus();
      }
    }
    if (name == "no-gpu") {
      spec->devices.clear();
      return OkStatus();
    }
  }
  std::string known;
  for (const auto& p : MachinePresets()) known += (known.empty() ? "" : ", ") + p.name;
  return Error(ErrorKind::kNotFound,
               fmt::format("unknown machine preset '{}'; presets (see `moetune machines`): {}",
                           name_in, known));
}

namespace {

// A preset that describes a device (a GPU or an RPC host) rather than the rest
// of the machine.
bool IsDevicePreset(std::string_view name) {
  MachineSpec probe;
  probe.devices.clear();
  return ApplyMachinePreset(name, &probe).ok() && probe.has_gpu();
}

}  // namespace

Status ApplyMachinePresets(std::string_view list, MachineSpec* spec) {
  // The first device preset replaces the machine's devices; each later one
  // adds a device after them (rtx3090-24g,rtx3060-12g: CUDA0 and CUDA1).
  bool device_seen = false;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view item = list.substr(start, comma - start);
    if (item.empty())
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("empty preset in --machine '{}'", list));
    if (device_seen && IsDevicePreset(item)) {
      MachineSpec more = *spec;
      MOETUNE_TRY(ApplyMachinePreset(item, &more));
      spec->devices.push_back(more.devices.front());
      if (spec->devices.size() > static_cast<size_t>(kMaxMachineDevices))
        return Error(ErrorKind::kInvalidArgument,
                     fmt::format("--machine '{}': at most {} devices", list, kMaxMachineDevices));
    } else {
      MOETUNE_TRY(ApplyMachinePreset(item, spec));
      device_seen = device_seen || IsDevicePreset(item);
    }
    start = comma + 1;
  }
  return OkStatus();
}

Result<double> ParseBandwidthGbps(std::string_view text) {
  auto bad = [&] {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("bad bandwidth '{}'; use e.g. 504GB/s, 25GB/s, 1.8TB/s or 900MB/s", text));
  };
  std::string t;
  for (char c : text) {
    if (c != ' ') t.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  double v = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || !(v > 0) || !std::isfinite(v)) return bad();
  std::string unit = t.substr(static_cast<size_t>(ptr - t.data()));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "/s") unit.resize(unit.size() - 2);
  double scale = 0;
  if (unit.empty() || unit == "gb" || unit == "g") scale = 1;
  if (unit == "tb" || unit == "t") scale = 1000;
  if (unit == "mb" || unit == "m") scale = 0.001;
  if (unit == "gib") scale = 1.073741824;
  if (unit == "mib") scale = 1.048576e-3;
  if (scale == 0) return bad();
  return v * scale;
}

Status ParseCpuShape(std::string_view text, CpuSpec* cpu) {
  auto bad = [&] {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("bad --cpu '{}'; use e.g. 6P+8E, 8P+16E/smt2, 16C/smt2, 8c16t or 4", text));
  };
  const std::string t = Lower(text);
  int p = 0, e = 0, smt = 1, logical = 0;
  size_t i = 0;
  auto number = [&](int* out) {
    const size_t s = i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
    if (i == s || i - s > 4) return false;
    *out = std::stoi(t.substr(s, i - s));
    return true;
  };
  if (!number(&p)) return bad();
  if (i < t.size() && (t[i] == 'p' || t[i] == 'c')) ++i;
  const bool plus = i < t.size() && t[i] == '+';
  if (plus) ++i;
  if (plus && (i >= t.size() || t[i] < '0' || t[i] > '9')) return bad();
  if (i < t.size() && t[i] >= '0' && t[i] <= '9') {
    int n = 0;
    if (!number(&n) || i >= t.size()) return bad();
    if (t[i] == 'e') {
      e = n;
    } else if (t[i] == 't') {
      logical = n;
    } else {
      return bad();
    }
    ++i;
  }
  if (i < t.size()) {
    if (t.compare(i, 4, "/smt") != 0) return bad();
    i += 4;
    if (!number(&smt) || i != t.size()) return bad();
  }
  if (p < 1) return bad();  // before the division: "0c8t" has no cores
  if (logical > 0) {
    if (logical % p != 0) return bad();
    smt = logical / p;
  }
  if (p < 1 || p > 1024 || e > 1024 || smt < 1 || smt > 8) return bad();
  cpu->p_cores = p;
  cpu->e_cores = e;
  cpu->smt = smt;
  cpu->quota.reset();
  cpu->source = fmt::format("--cpu {}", text);
  return OkStatus();
}

Result<SpillMode> ParseSpillMode(std::string_view text) {
  if (text == "silent") return SpillMode::kSilent;
  if (text == "strict") return SpillMode::kStrict;
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("--spill '{}': use silent (Windows sysmem fallback, CUDA unified "
                           "memory) or strict (allocations fail)",
                           text));
}

}  // namespace moetune
