#pragma once
/// `moetune doctor` as a library call: probes GPUs, CPU, memory and the engine
/// and builds the machine profile and its verdicts. report/doctor_report.h
/// renders it (text or JSON); the CLI (src/cli/doctor.cc) only parses flags,
/// adds the model, prints and saves.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "doctor/verdicts.h"
#include "engine/engine_traps.h"
#include "hw/bandwidth_reference.h"
#include "hw/machine_profile.h"
#include "hw/platform.h"
#include "hw/sysfs.h"

namespace moetune {

struct DoctorOptions {
  SysRoot root{"/"};
  std::string nvml_library = "libnvidia-ml.so.1";
  bool measure_bandwidth = true;
  double bandwidth_budget_s = 1.0;
  /// Run sysbench's read test beside the measurement (when installed).
  bool sysbench_reference = true;
  /// The engine as the one engine discovery found it (or its error), given by
  /// the command layer; nullopt = not examined (--no-engine).
  std::optional<EngineProbe> engine;
  std::map<std::string, std::string> env;  // CurrentEnvironment() in the CLI
  /// The llama.cpp folder the user named (--llama-dir), judged by the platform
  /// check even when discovery failed; "" = MOETUNE_LLAMA_DIR from env, else
  /// the engine found.
  std::string engine_dir;
};

struct DoctorReport {
  MachineProfile profile;
  std::optional<EngineProbe> engine;
  std::vector<EngineTrap> traps;
  std::vector<Verdict> verdicts;
  Platform platform;  // WSL, a Windows engine, a GPU sharing RAM (hw/platform.h)
  std::optional<ModelNeeds> model;
  std::optional<ExpertFit> model_fit;  // the split that fits the free VRAM now
  // References for the measured bandwidth (bandwidth_reference.h); the notes
  // say why one is missing.
  std::optional<SysbenchReference> sysbench;
  std::optional<DecodeReference> decode;
  std::vector<std::string> reference_notes;
  double seconds = 0;
};

/// Runs every probe. Never fails: a missing source becomes a note.
DoctorReport RunDoctor(const DoctorOptions& options);

/// Recomputes verdicts (and the model fit) after `model` is set.
void AddModelToReport(const ModelNeeds& model, DoctorReport* report);

/// Every note about a missing or partial source, prefixed by its area.
std::vector<std::string> MissingSources(const DoctorReport& report);

}  // namespace moetune
