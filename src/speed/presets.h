#pragma once
/// Named machine parts for what-if profiles (`--machine rtx4070-12g,ddr4-3200-2ch,6p8e`)
/// and the what-if flags (`--gpu-bw 504GB/s --cpu 6P+8E/smt2 ...`). Every preset
/// names where its figures come from; `moetune machines` lists them.

#include <string>
#include <string_view>
#include <vector>

#include "speed/machine_spec.h"
#include "util/result.h"

namespace moetune {

enum class PresetKind { kGpu, kMemory, kCpu, kOther };
const char* PresetKindName(PresetKind kind);

/// One preset as listed by `moetune machines`.
struct MachinePreset {
  std::string name;  // "rtx4070-12g"
  PresetKind kind = PresetKind::kGpu;
  std::string title;    // "NVIDIA GeForce RTX 4070 12 GB"
  std::string figures;  // "12 GiB, 504 GB/s, 116.8 FP16 TFLOPS, PCIe 4.0 x16 (25.2 GB/s pinned)"
  std::string source;   // where the figures come from
};

/// Every preset, GPUs first, in a stable order.
std::vector<MachinePreset> MachinePresets();

/// Applies one preset to `spec`. GPUs accept an "Nx" prefix for N identical
/// cards ("2xrtx5090-32g"); "rpc-cpu" describes llama.cpp's RPC device served
/// by ggml-rpc-server on this CPU over loopback TCP, "rpc-1gbe" and "rpc-10gbe"
/// a host like this machine behind Ethernet. kNotFound lists the presets.
Status ApplyMachinePreset(std::string_view name, MachineSpec* spec);

/// The most devices a what-if machine describes.
inline constexpr int kMaxMachineDevices = 16;

/// Applies a comma-separated list in order ("rtx4070-12g,ddr4-3200-2ch,6p8e").
/// The first device preset (a GPU or an RPC host) replaces the machine's
/// devices, each later one adds a device after them in the engine's order:
/// "rtx3090-24g,rtx3060-12g,ddr4-3200-2ch,8c16t" is a 3090 and a 3060.
/// "rpc-1gbe"/"rpc-10gbe" are hosts with the CPU and RAM described before them.
Status ApplyMachinePresets(std::string_view list, MachineSpec* spec);

/// Fills `spec->accel()` from the GPU preset whose marketing name appears in
/// `gpu_name` (e.g. "NVIDIA GeForce RTX 4090" -> rtx4090-24g). False when none does.
bool GpuPresetByMarketingName(std::string_view gpu_name, MachineSpec* spec);

/// Parses a bandwidth: "504GB/s", "25 GB/s", "40GB", "1.8TB/s", "900MB/s", "40"
/// (GB/s). Returns 1e9 bytes per second units (GB/s).
Result<double> ParseBandwidthGbps(std::string_view text);

/// Parses a CPU shape: "6P+8E", "8P+16E/smt2", "16C/smt2", "8c16t", "6p8e", "4".
Status ParseCpuShape(std::string_view text, CpuSpec* cpu);

/// Parses "silent" or "strict".
Result<SpillMode> ParseSpillMode(std::string_view text);

}  // namespace moetune
