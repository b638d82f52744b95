#pragma once
/// The machine profile: what `moetune doctor` found, saved as JSON so that
/// `plan` and `tune` start from the true picture (free VRAM after other
/// programs, usable threads, RAM and its bandwidth) without probing again.
///
/// Saved atomically to DefaultMachineProfilePath(): $MOETUNE_PROFILE, else
/// $XDG_CONFIG_HOME/moetune/machine.json, else ~/.config/moetune/machine.json.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hw/bandwidth.h"
#include "hw/cpu_topology.h"
#include "hw/gpu.h"
#include "hw/system_memory.h"
#include "util/result.h"

namespace moetune {

struct MachineProfile {
  int schema_version = 1;
  std::string created_at;  // UTC, ISO 8601
  std::string hostname;
  std::string moetune_version;
  std::vector<GpuInfo> gpus;  // NVIDIA first (NVML order = CUDA order), then AMD
  std::string nvidia_driver_version;
  std::vector<std::string> gpu_notes;  // "no NVIDIA driver: ..." and other scan notes
  CpuTopology cpu;                     // cores[] is not saved
  SystemMemory memory;
  std::optional<BandwidthResult> bandwidth;  // absent when not measured
  std::vector<std::string> notes;
  /// `moetune calibrate`'s record (speed/calibration.h), kept opaque here: null
  /// when the machine was never calibrated. Saved by SaveMachineProfile.
  nlohmann::json calibration;

  /// Free bytes summed over all GPUs: the VRAM `plan` may use when the user
  /// gives no --vram. 0 without GPUs.
  int64_t TotalFreeVramBytes() const;
};

nlohmann::json MachineProfileToJson(const MachineProfile& p);
/// Errors (kFormat) name the field that is missing or of the wrong type.
Result<MachineProfile> MachineProfileFromJson(const nlohmann::json& j);

/// $MOETUNE_PROFILE, $XDG_CONFIG_HOME/moetune/machine.json, or
/// $HOME/.config/moetune/machine.json ("" when none of them is set).
std::string DefaultMachineProfilePath();

/// Reads a saved profile. kNotFound when the file is absent (the message says
/// to run `moetune doctor`), kFormat when it is not a profile.
Result<MachineProfile> LoadMachineProfile(const std::string& path);

/// Writes the profile atomically (temp file + rename), creating the folder.
Status SaveMachineProfile(const MachineProfile& profile, const std::string& path);

}  // namespace moetune
