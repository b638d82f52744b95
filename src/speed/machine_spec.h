#pragma once
/// The machine as the speed model sees it: its devices (GPUs, identical or not,
/// and llama.cpp's RPC devices, each with its own memory, rates and link), the
/// CPU cores, the RAM, and what happens when GPU allocations exceed free VRAM. Built from the
/// doctor's profile (this machine) or from named presets and what-if flags (speed/presets.h), so
/// that `plan --predict` and the simulated engine can answer "what would a 16 GB card do with this
/// model".
///
/// Every figure carries where it came from (`sources`), because predictions
/// are only as good as their inputs and the user must be able to check them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/machine_profile.h"

namespace moetune {

/// What a GPU allocation beyond free VRAM does.
enum class SpillMode {
  kStrict,  // the allocation fails: the model or context does not load (Linux CUDA default)
  kSilent,  // it lands in host memory and every GPU access to it crosses PCIe (Windows sysmem
            // fallback, GGML_CUDA_ENABLE_UNIFIED_MEMORY)
};
const char* SpillModeName(SpillMode mode);

enum class AcceleratorKind {
  kGpu,     // CUDA-like: own memory, tensor cores, PCIe link
  kRpcCpu,  // llama.cpp's RPC device served by ggml-rpc-server on a CPU over TCP
};

/// The CPU cores llama.cpp's threads can run on.
struct CpuSpec {
  std::string name;
  int p_cores = 1;                // performance cores (all cores on a non-hybrid CPU)
  int e_cores = 0;                // efficiency cores
  int smt = 1;                    // hardware threads per performance core (1 or 2)
  double core_peak_gflops = 96;   // f32 FMA peak of one P-core: GHz x FLOP/cycle
  double e_core_relative = 0.45;  // E-core throughput relative to a P-core
  int64_t llc_bytes = 0;          // last-level cache (0 = unknown)
  std::optional<double> quota;    // cgroup CPU quota in CPUs
  std::string source;

  int LogicalCpus() const { return p_cores * smt + e_cores; }
};

/// One device llama.cpp offloads layers to (or `count` identical ones).
struct AcceleratorSpec {
  AcceleratorKind kind = AcceleratorKind::kGpu;
  std::string name;        // "RTX 4070 12 GB", "RPC0 (ggml-rpc-server, 1 thread)"
  int count = 1;           // identical GPUs splitting the layers (-sm layer)
  int64_t vram_total = 0;  // bytes, all GPUs together
  int64_t vram_free = 0;   // bytes free for llama.cpp, all GPUs together (before --reserve)
  double mem_bw_gbps = 0;  // peak memory bandwidth of one GPU, 1e9 B/s
  double fp16_tflops = 0;  // dense FP16 tensor throughput of one GPU (FP16 accumulate)
  double link_gbps = 0;    // host->device copies from pinned memory, measured-typical, 1e9 B/s
  double link_pageable_gbps = 0;  // the same from pageable (mmap) memory
  int rpc_threads = 1;            // kRpcCpu: threads of ggml-rpc-server (-t)
  /// kRpcCpu: the network between llama.cpp and the server. `net_gbps` is the
  /// payload rate (1e9 B/s; 0: loopback, the calibrated socket rate only) and
  /// `net_rtt_us` the round trip a graph_compute call waits for on top of the
  /// server's own work (0: loopback).
  double net_gbps = 0;
  double net_rtt_us = 0;
  /// kRpcCpu: the server machine's cores (its RAM bandwidth is `mem_bw_gbps`).
  /// Unset: the server runs on this machine's CPU (loopback).
  std::optional<CpuSpec> rpc_cpu;
  /// VRAM the engine's GPU runtime takes beyond llama.cpp's buffers: the CUDA
  /// context, the cuBLAS workspace and ggml's memory pool (kCudaRuntimeBytes for a
  /// GPU; 0 for the RPC device). `vram_free` is measured before it exists.
  int64_t runtime_bytes = 0;
  std::string source;
};

/// The CUDA runtime's share of a GPU while llama.cpp runs: llama.cpp's own
/// memory breakdown reports 451-456 MiB per RTX 4090 "unaccounted" (total minus
/// free minus its model, context and compute buffers) on a machine where nothing
/// else used the cards (github.com/ggml-org/llama.cpp/pull/15860).
inline constexpr int64_t kCudaRuntimeBytes = int64_t{450} << 20;

/// Host RAM.
struct RamSpec {
  std::string name;
  double read_gbps = 40;        // typical measured read bandwidth, all cores, 1e9 B/s
  double theoretical_gbps = 0;  // MT/s x 8 B x channels (0 = unknown)
  int64_t available = 0;        // bytes available for the model (0 = unknown)
  double disk_gbps = 2.0;       // reads of pages that do not fit in RAM (NVMe-class)
  std::string source;
};

struct MachineSpec {
  std::string label;  // "this machine (doctor profile ...)" or "what-if: rtx4070-12g,..."
  bool what_if = false;
  /// The devices in the engine's order (CUDA0.., then RPC0..); empty: CPU only.
  std::vector<AcceleratorSpec> devices;
  CpuSpec cpu;
  RamSpec ram;
  SpillMode spill = SpillMode::kStrict;
  int64_t reserve = 0;  // VRAM kept free beyond what others hold (--reserve)
  std::vector<std::string> notes;

  bool has_gpu() const { return !devices.empty(); }
  /// The first device (what a one-device command uses); null without one.
  const AcceleratorSpec* accel() const { return devices.empty() ? nullptr : &devices.front(); }
  AcceleratorSpec* accel() { return devices.empty() ? nullptr : &devices.front(); }
  /// Every single device, `count` identical cards expanded into as many devices
  /// each with its share of the memory, in the engine's order.
  std::vector<AcceleratorSpec> SingleDevices() const;
  /// The engine's names of SingleDevices(): "CUDA0", "CUDA1", "RPC0", ...
  std::vector<std::string> DeviceNames() const;
  /// VRAM llama.cpp may use on the first device: free - reserve (0 without one).
  int64_t VramBudget() const;
  /// "RTX 4070 12 GB + DDR4-3200 2ch (43 GB/s) + 6P+8E" style one-liner.
  std::string Describe() const;
};

/// This machine from the doctor's profile. GPU compute (not reported by the
/// driver) comes from the preset whose name matches the GPU's; without a match it
/// is estimated from the memory bandwidth (noted).
MachineSpec MachineSpecFromProfile(const MachineProfile& profile);

/// The topology a simulated run sees on `cpu`: performance cores numbered
/// first (with their SMT siblings next to each other), then efficiency cores;
/// the thread counts worth measuring (hw/cpu_topology.h SuggestThreads) and
/// llama.cpp's default thread count on it (common_cpu_get_num_math on a hybrid
/// CPU, else the physical cores; llama.cpp common/common.cpp).
CpuTopology SimulatedCpuTopology(const CpuSpec& cpu);

/// A machine with nothing known: 4 cores, 40 GB/s RAM, no GPU. What-if flags
/// start from it when no profile exists.
MachineSpec DefaultMachineSpec();

/// Pinned and pageable host-to-device copy rates of a PCIe link (measured-typical,
/// see docs/speed-model.md): 80% of the line rate for gens 1-4 pinned, 89% for gen 5+,
/// pageable 78% of pinned.
void PcieLinkRates(int generation, int lanes, double* pinned_gbps, double* pageable_gbps);

}  // namespace moetune
