#pragma once
/// The what-if machine flags shared by `plan`, `bench`, `calibrate` (and later
/// `tune`): `--machine PRESET[,PRESET...]`, `--gpu-bw`, `--pcie-bw`, `--ram-bw`,
/// `--cpu 6P+8E[/smt2]`, `--spill silent|strict`, and the GPU memory flags
/// `--vram` (total), `--vram-used` (held by other programs) and `--reserve`
/// (kept free beyond that), one model for every command (plan/gpu_budget.h).
/// The machine starts from the doctor's profile (this machine) and every flag
/// changes one part of it.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/gpu_budget.h"
#include "plan/placement.h"
#include "speed/calibration.h"
#include "speed/machine_spec.h"
#include "speed/uncertainty.h"
#include "util/result.h"

namespace moetune {

/// --vram, --vram-used, --reserve as given ("" = not given).
struct GpuBudgetOptions {
  std::string vram;       // the GPU's total memory
  std::string vram_used;  // held by other programs
  std::string reserve;    // kept free beyond that
  bool any() const { return !vram.empty() || !vram_used.empty() || !reserve.empty(); }
};

/// Registers --vram, --vram-used and --reserve with the one help text; returns them.
/// `device_lists`: each takes a comma list, one size per device (plan).
std::vector<CLI::Option*> AddGpuBudgetFlags(CLI::App* cmd, GpuBudgetOptions* options,
                                            bool device_lists = false);

/// The flags as given, for a command that reproduces a run: " --vram 12GiB --reserve 1GiB".
std::string GpuBudgetFlagsText(const GpuBudgetOptions& options);

/// The flags in bytes (each was checked by its validator).
GpuBudgetFlags ParsedGpuBudgetFlags(const GpuBudgetOptions& options);

/// Whether --vram, --vram-used or --reserve lists several devices.
bool SeveralDevices(const GpuBudgetOptions& options);

/// The devices of --vram A[,B...] (one each, in the engine's listing order:
/// its local GPUs, then one per server of `rpc`): --vram-used and --reserve
/// give one size for every device or one per device. The servers' devices are
/// RPC0, RPC1, ... (llama.cpp's names for them), the sizes before them local
/// GPUs CUDA0, CUDA1, ...; each one's budget is printed first. Mismatched
/// lists (more servers than sizes) are errors that name the flag. A plan uses
/// the devices in llama.cpp's model order (PlanRequest::SetDevices).
/// For commands that start the engine across RPC servers only (tune, serve):
/// an error when `devices` (DeviceBudgetsFromFlags with --rpc) hold local GPUs
/// as well, naming `command` and what works instead (moetune plan).
Status RpcServersOnly(const std::vector<DeviceBudget>& devices, const std::string& command);

Result<std::vector<DeviceBudget>> DeviceBudgetsFromFlags(const GpuBudgetOptions& options,
                                                         const std::string& rpc);

struct MachineFlags {
  std::string machine;
  std::string gpu_bw;
  std::string pcie_bw;
  std::string ram_bw;
  std::string cpu;
  std::string spill;
  GpuBudgetOptions gpu;
  std::string profile;  // machine profile path ("" = the default)
};

/// Registers the flags on `cmd`. `with_vram` adds the GPU memory flags
/// (commands that register them themselves pass false and copy them into
/// `flags->gpu`); `with_profile` adds --profile.
void AddMachineFlags(CLI::App* cmd, MachineFlags* flags, bool with_vram, bool with_profile);

/// Accepts a comma list of what-if machine presets (`--machine`, `demo --sim-machine`).
CLI::Validator MachinePresetsValidator();

struct ResolvedMachine {
  MachineSpec spec;
  std::string profile_path;
  bool profile_found = false;
  /// The calibration stored in the profile, when there is one.
  std::optional<CalibrationRecord> calibration;
  CalibrationConstants constants;  // calibration's constants or the defaults
  /// The GPU memory model the spec's figures come from, with their sources.
  GpuMemoryBudget gpu;
  /// How far predictions with `constants` may be off: the calibration's band on
  /// the calibrated machine itself, the published runs' band otherwise (a
  /// what-if machine was never measured).
  PredictionUncertainty uncertainty = UncalibratedUncertainty();
};

/// True when any what-if flag is set (the GPU memory flags included).
bool HasWhatIf(const MachineFlags& flags);
/// True when a what-if flag other than the GPU memory ones is set.
bool HasWhatIfMachine(const MachineFlags& flags);

/// The GPU budget of a command: with what-if machine flags, the what-if
/// machine's (ResolveMachine); else the GPU memory flags over the doctor's
/// profile (`flags.profile`, "" = the default) and, without one,
/// `engine_has_gpu`. Printed first by the commands (PrintGpuBudget).
Result<GpuMemoryBudget> ResolveCommandGpuBudget(const MachineFlags& flags,
                                                std::optional<bool> engine_has_gpu);

/// "moetune: GPU budget ... = ... total (...) - ..." on stderr.
void PrintGpuBudget(const GpuMemoryBudget& budget);

/// Builds the machine: the profile (or a generic machine without one), then the
/// presets in order, then the explicit flags. Errors name the bad flag value.
Result<ResolvedMachine> ResolveMachine(const MachineFlags& flags);

}  // namespace moetune
