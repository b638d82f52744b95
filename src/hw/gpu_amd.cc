#include "hw/gpu_amd.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace moetune {

int PcieGenerationFromSpeed(const std::string& speed) {
  const double gts = std::strtod(speed.c_str(), nullptr);
  if (gts >= 60) return 6;
  if (gts >= 30) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7.5) return 3;
  if (gts >= 4.5) return 2;
  if (gts >= 2) return 1;
  return 0;
}

AmdScan ScanAmdGpus(const SysRoot& root) {
  AmdScan scan;
  if (!root.Exists("/sys/class/drm")) {
    scan.notes.push_back("/sys/class/drm absent: no DRM GPU driver loaded");
    return scan;
  }
  int index = 0;
  for (const auto& entry : root.List("/sys/class/drm")) {
    // cardN only; "cardN-DP-1" style entries are connectors.
    if (entry.size() <= 4 || entry.compare(0, 4, "card") != 0 ||
        entry.find_first_not_of("0123456789", 4) != std::string::npos) {
      continue;
    }
    const std::string dev = "/sys/class/drm/" + entry + "/device";
    if (root.ReadLine(dev + "/vendor").value_or("") != "0x1002") continue;
    GpuInfo g;
    g.index = index++;
    g.vendor = "amd";
    g.memory_query = "sysfs";
    g.name = root.ReadLine(dev + "/product_name")
                 .value_or(fmt::format("AMD GPU {} (PCI device {})", entry,
                                       root.ReadLine(dev + "/device").value_or("?")));
    const auto total = root.ReadInt(dev + "/mem_info_vram_total");
    const auto used = root.ReadInt(dev + "/mem_info_vram_used");
    if (total && used) {
      g.total_bytes = *total;
      g.used_bytes = *used;
      g.free_bytes = std::max<int64_t>(0, *total - *used);
      g.used_by_others_bytes = *used;
    } else {
      g.notes.push_back(
          fmt::format("{}/mem_info_vram_total or _used not readable (amdgpu driver?)", dev));
    }
    g.gtt_total_bytes = root.ReadInt(dev + "/mem_info_gtt_total").value_or(0);
    g.gtt_used_bytes = root.ReadInt(dev + "/mem_info_gtt_used").value_or(0);
    g.pcie_gen_current =
        PcieGenerationFromSpeed(root.ReadLine(dev + "/current_link_speed").value_or(""));
    g.pcie_gen_max = PcieGenerationFromSpeed(root.ReadLine(dev + "/max_link_speed").value_or(""));
    g.pcie_width_current = static_cast<int>(root.ReadInt(dev + "/current_link_width").value_or(0));
    g.pcie_width_max = static_cast<int>(root.ReadInt(dev + "/max_link_width").value_or(0));
    g.pcie_bandwidth_gbps = PcieBandwidthGbps(g.pcie_gen_max, g.pcie_width_max);
    g.notes.push_back("per-process VRAM and memory bandwidth are not read for AMD GPUs");
    scan.gpus.push_back(std::move(g));
  }
  return scan;
}

}  // namespace moetune
