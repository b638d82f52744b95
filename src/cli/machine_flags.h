#pragma once
/// The what-if machine flags shared by `plan`, `bench`, `calibrate` (and later
/// `tune`): `--machine PRESET[,PRESET...]`, `--gpu-bw`, `--pcie-bw`, `--ram-bw`,
/// `--cpu 6P+8E[/smt2]`, `--spill silent|strict`, and (where the command does not
/// already have them) `--vram` and `--reserve`. The machine starts from the
/// doctor's profile (this machine) and every flag changes one part of it.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "speed/calibration.h"
#include "speed/machine_spec.h"
#include "speed/uncertainty.h"
#include "util/result.h"

namespace moetune {

struct MachineFlags {
  std::string machine;
  std::string gpu_bw;
  std::string pcie_bw;
  std::string ram_bw;
  std::string cpu;
  std::string spill;
  std::string vram;     // free VRAM
  std::string reserve;  // VRAM held by other programs
  std::string profile;  // machine profile path ("" = the default)
};

/// Registers the flags on `cmd`. `with_vram` adds --vram/--reserve (commands like
/// `plan` that already have them pass false and hand their values to ResolveMachine);
/// `with_profile` adds --profile.
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
  /// How far predictions with `constants` may be off: the calibration's band on
  /// the calibrated machine itself, the published runs' band otherwise (a
  /// what-if machine was never measured).
  PredictionUncertainty uncertainty = UncalibratedUncertainty();
};

/// True when any what-if flag is set.
bool HasWhatIf(const MachineFlags& flags);

/// Builds the machine: the profile (or a generic machine without one), then the
/// presets in order, then the explicit flags. Errors name the bad flag value.
Result<ResolvedMachine> ResolveMachine(const MachineFlags& flags);

}  // namespace moetune
