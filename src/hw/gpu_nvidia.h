#pragma once
/// NVIDIA GPUs through NVML, loaded at run time with dlopen so that moetune has
/// no link-time dependency on the driver: a machine without the library simply
/// has "no NVIDIA driver", which is a finding, not an error.
///
/// Prefers the versioned entry points where the driver has them
/// (nvmlDeviceGetMemoryInfo_v2 reports driver-reserved memory separately;
/// nvmlDeviceGetComputeRunningProcesses_v3 carries MIG ids) and falls back to
/// the older ones on old drivers.

#include <string>
#include <vector>

#include "hw/gpu.h"
#include "hw/sysfs.h"

namespace moetune {

struct NvidiaScanOptions {
  /// dlopen name or path; tests pass the fake library built beside them.
  std::string library = "libnvidia-ml.so.1";
  /// Where /proc/<pid>/comm is read when NVML cannot name a process.
  SysRoot proc_root{"/"};
};

struct NvidiaScan {
  bool library_loaded = false;  // false: "no NVIDIA driver"
  bool initialized = false;     // nvmlInit succeeded
  std::string driver_version;
  std::vector<GpuInfo> gpus;
  std::vector<std::string> notes;
};

/// Queries every NVIDIA GPU. Never fails; what could not be read is in notes
/// (scan level) or GpuInfo::notes (per device).
NvidiaScan ScanNvidiaGpus(const NvidiaScanOptions& options = {});

}  // namespace moetune
