#pragma once
/// What doctor knows about one GPU, whatever the vendor and source.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moetune {

/// A process holding memory on a GPU.
struct GpuProcess {
  uint32_t pid = 0;
  std::string name;                   // "" when neither NVML nor /proc could tell
  std::optional<int64_t> used_bytes;  // nullopt: the driver does not say (containers, WSL)
};

struct GpuInfo {
  int index = 0;       // the vendor's device index (CUDA order for NVIDIA via NVML)
  std::string vendor;  // "nvidia", "amd"
  std::string name;
  std::string pci_bus_id;
  int64_t total_bytes = 0;
  int64_t free_bytes = 0;
  int64_t used_bytes = 0;
  int64_t reserved_bytes = 0;  // held by driver/firmware (NVML v2 memory query only)
  /// Memory that other programs hold now: total - free - reserved. moetune
  /// itself holds none while doctor runs (it never creates a GPU context).
  int64_t used_by_others_bytes = 0;
  std::string memory_query;  // "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo", "sysfs"
  std::vector<GpuProcess> processes;
  bool processes_known = false;  // false when the process list could not be read
  int pcie_gen_current = 0;      // 0 = unknown
  int pcie_gen_max = 0;
  int pcie_width_current = 0;
  int pcie_width_max = 0;
  double pcie_bandwidth_gbps = 0;  // one direction, at the maximum link, after encoding
  int memory_bus_width_bits = 0;
  int memory_clock_max_mhz = 0;
  double peak_bandwidth_gbps = 0;  // bus width x max memory clock x 2 (double data rate)
  int64_t gtt_total_bytes = 0;     // AMD: system memory the GPU may map
  int64_t gtt_used_bytes = 0;
  std::vector<std::string> notes;  // fields the driver did not give
};

/// One direction of a PCIe link in GB/s after line encoding (8b/10b up to
/// gen 2, 128b/130b from gen 3; gen 6 FLIT approximated as 2x gen 5).
double PcieBandwidthGbps(int generation, int width);

/// Peak memory bandwidth from NVML's bus width (bits) and maximum memory clock
/// (MHz): NVML reports the clock at which data moves twice per cycle.
double GpuPeakBandwidthGbps(int bus_width_bits, int memory_clock_mhz);

}  // namespace moetune
