#pragma once
/// AMD GPUs through the amdgpu driver's sysfs files:
///   /sys/class/drm/cardN/device/{vendor,device,product_name,
///       mem_info_vram_total,mem_info_vram_used,mem_info_gtt_total,mem_info_gtt_used,
///       current_link_speed,current_link_width,max_link_speed,max_link_width}
/// GTT is system memory the GPU can map; llama.cpp's ROCm/Vulkan backends can
/// spill into it, with the same silent slowdown as CUDA unified memory.

#include <string>
#include <vector>

#include "hw/gpu.h"
#include "hw/sysfs.h"

namespace moetune {

struct AmdScan {
  std::vector<GpuInfo> gpus;
  std::vector<std::string> notes;
};

/// Lists AMD cards (PCI vendor 0x1002). Never fails.
AmdScan ScanAmdGpus(const SysRoot& root);

/// "16.0 GT/s PCIe" -> 4; 0 when unknown.
int PcieGenerationFromSpeed(const std::string& speed);

}  // namespace moetune
