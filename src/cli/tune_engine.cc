#include "cli/tune_engine.h"

#include <fmt/format.h>

#include <iostream>
#include <utility>
#include <vector>

#include "doctor/doctor.h"
#include "engine/engine_info.h"
#include "engine/llama_bench.h"
#include "engine/rpc_host.h"
#include "engine/sim_engine.h"
#include "report/uncertainty_report.h"
#include "speed/machine_spec.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {
namespace {

// Every figure of a what-if machine that changes a simulated result, so that a
// journal of one machine never resumes a tune of another.
std::string MachineFingerprint(const MachineSpec& m) {
  std::string s = "SIMULATED " + m.Describe();
  if (m.has_gpu()) s += fmt::format(", {} spill, reserve {} B", SpillModeName(m.spill), m.reserve);
  for (const AcceleratorSpec& d : m.devices) {
    s += fmt::format(", link {:.3g}/{:.3g} GB/s, {:.4g} TFLOPS x{}", d.link_gbps,
                     d.link_pageable_gbps, d.fp16_tflops, d.count);
    if (d.kind == AcceleratorKind::kRpcCpu)
      s += fmt::format(" (RPC, {} threads, network {:.3g} GB/s, {:.3g} us)", d.rpc_threads,
                       d.net_gbps, d.net_rtt_us);
  }
  s += fmt::format(", core {:.4g} GFLOPS, E-core x{:.3g}, quota {}, RAM {} B",
                   m.cpu.core_peak_gflops, m.cpu.e_core_relative,
                   m.cpu.quota ? fmt::format("{:.3g}", *m.cpu.quota) : "none", m.ram.available);
  return s;
}

// FNV-1a, for a short tag that tells journals of different what-if machines apart.
std::string ShortHash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:08x}", static_cast<uint32_t>(h ^ (h >> 32)));
}

// The flags that describe the what-if machine, as given.
std::string SimReproduce(const SimBenchOptions& sim) {
  std::string r = fmt::format(" --engine sim --seed {}", sim.seed);
  const MachineFlags& f = sim.machine;
  for (const auto& [flag, value] :
       std::vector<std::pair<const char*, std::string>>{{"--machine", f.machine},
                                                        {"--gpu-bw", f.gpu_bw},
                                                        {"--pcie-bw", f.pcie_bw},
                                                        {"--ram-bw", f.ram_bw},
                                                        {"--cpu", f.cpu},
                                                        {"--spill", f.spill},
                                                        {"--profile", f.profile}}) {
    if (!value.empty()) r += fmt::format(" {} {}", flag, value);
  }
  return r + GpuBudgetFlagsText(f.gpu);
}

}  // namespace

Result<TuneEngine> SimTuneEngine(const SimBenchOptions& options) {
  ResolvedMachine resolved;
  MOETUNE_ASSIGN_OR_RETURN(SimEngineOptions so, ResolveSimEngine(options, &resolved));
  TuneEngine t;
  t.gpu = resolved.gpu;
  const MachineSpec& spec = resolved.spec;
  t.machine = TuneMachineFromSpec(spec, so.constants);
  TuneMachine& m = t.machine;
  auto engine = std::make_unique<SimEngine>(so);
  const std::string constants = resolved.calibration ? fmt::format("calibrated constants ({})",
                                                                   resolved.calibration->created_at)
                                                     : std::string("default constants");
  m.simulated = true;
  m.engine_line = fmt::format("{}; {}", engine->Info().version_line, constants);
  m.machine_line = "SIMULATED " + spec.Describe();
  m.notes.push_back(fmt::format(
      "SIMULATED: every measurement comes from the speed model on {} (seed {}), not from "
      "llama.cpp; the doctor's checks of this machine do not apply",
      spec.Describe(), options.seed));
  // Every simulated figure is a prediction: it carries the constants' band.
  m.notes.push_back(UncertaintyText(resolved.uncertainty));
  m.identity.engine = fmt::format("moetune simulated engine, seed {}, {}", options.seed, constants);
  m.identity.machine = MachineFingerprint(spec);
  t.journal_suffix = "-sim-" + ShortHash(m.identity.engine + "\n" + m.identity.machine);
  t.reproduce = SimReproduce(options);
  t.engine = std::move(engine);
  return t;
}

namespace {

// --rpc or a --vram list: the devices tune searches across, on the machine
// `t` describes (a summed budget for the header; each device's was printed).
Status SetRealDevices(const EngineInfo& info, const GpuBudgetOptions& gpu, const std::string& rpc,
                      TuneEngine* t) {
  TuneMachine& m = t->machine;
  if (!rpc.empty()) {
    if (!info.devices.empty())
      return Error(ErrorKind::kInvalidArgument,
                   "tune --rpc with this machine's own GPUs as well is not supported yet: give "
                   "the local GPUs' budgets without --rpc, or plan the whole set with `moetune "
                   "plan --vram A,B,... --rpc ...`");
  }
  MOETUNE_ASSIGN_OR_RETURN(std::vector<DeviceBudget> devices, DeviceBudgetsFromFlags(gpu, rpc));
  if (!rpc.empty()) MOETUNE_TRY(RpcServersOnly(devices, "tune"));
  if (rpc.empty()) {
    // Local devices: as many as the engine lists, by the engine's names.
    if (info.devices.size() < devices.size())
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("--vram gives {} sizes, but the engine lists {} GPU device(s): give "
                               "one size per device it lists (moetune engine), or --rpc for the "
                               "devices of RPC servers",
                               devices.size(), info.devices.size()));
    for (size_t i = 0; i < devices.size(); ++i) devices[i].name = info.devices[i].name;
  } else {
    m.rpc = *ParseRpcList(rpc);  // checked by DeviceBudgetsFromFlags
    // Each host answers before anything is measured (rpc_host.h).
    MOETUNE_TRY(CheckRpcHosts(m.rpc));
  }
  m.has_gpu = true;
  m.vram_free = m.reserve = 0;
  std::string names;
  for (const DeviceBudget& d : devices) {
    m.vram_free += d.free;
    m.reserve += d.reserve;
    names +=
        fmt::format("{}{} {} free", names.empty() ? "" : ", ", d.name, FormatBytes(Bytes(d.free)));
  }
  if (devices.size() > 1) {
    m.devices = devices;
  } else {
    m.device_kind = devices.front().kind;
  }
  for (size_t i = 0; i < m.rpc.size(); ++i) names += fmt::format("; RPC{} at {}", i, m.rpc[i]);
  m.machine_line += " + " + names;
  t->gpu.total = m.vram_free;  // what the devices have free, summed
  t->gpu.reserve = m.reserve;
  t->gpu.total_from = fmt::format("--vram over {} device(s)", devices.size());
  t->gpu.used_from = t->gpu.reserve_from = "the devices' own, above";
  if (!rpc.empty()) t->reproduce = " --rpc " + rpc;
  t->journal_suffix = "-devices-" + ShortHash(names);
  return OkStatus();
}

}  // namespace

Result<TuneEngine> RealTuneEngine(const std::string& llama_dir, bool force,
                                  const GpuBudgetOptions& gpu, const std::string& rpc) {
  DiscoveryOptions dopt;
  dopt.llama_dir = llama_dir;
  MOETUNE_ASSIGN_OR_RETURN(EngineInfo info, DiscoverEngine(dopt));
  DoctorOptions d;
  d.measure_bandwidth = false;
  d.env = CurrentEnvironment();
  d.engine = EngineProbeFromInfo(info);
  const DoctorReport doctor = RunDoctor(d);
  TuneEngine t;
  TuneMachine& m = t.machine;
  m.engine_line = info.version_line.empty() ? info.dir : info.version_line + " at " + info.dir;
  m.machine_line = CpuFingerprint(doctor.profile.cpu);
  bool critical = false;
  for (const auto& v : doctor.verdicts) {
    if (v.severity == "info") continue;
    m.checks.push_back(fmt::format("{}: {}: {} Fix: {}", v.severity, v.title, v.detail, v.fix));
    critical = critical || v.severity == "critical";
  }
  for (const auto& w : info.warnings) m.checks.push_back("engine: " + w);
  if (critical && !force) {
    for (const auto& c : m.checks) std::cerr << ForTerminal("moetune: " + c + "\n");
    return Error(ErrorKind::kInvalidArgument,
                 "a critical check failed (above); fix it first, or pass --force to tune anyway");
  }
  m.has_gpu = !info.devices.empty();
  m.cpu = doctor.profile.cpu;
  // The doctor's measurement now is the profile the budget starts from; an
  // engine without a GPU device plans host-only whatever the profile lists.
  if (!rpc.empty() || SeveralDevices(gpu)) {
    MOETUNE_TRY(SetRealDevices(info, gpu, rpc, &t));
  } else {
    GpuBudgetDefaults defaults;
    defaults.profile = &doctor.profile;
    MOETUNE_ASSIGN_OR_RETURN(t.gpu, ResolveGpuBudget(ParsedGpuBudgetFlags(gpu), defaults));
    m.vram_free = m.has_gpu ? t.gpu.free() : 0;
    m.reserve = t.gpu.reserve;
  }
  // Default constants; a machine with devices the profile does not list is
  // not predicted (the first runs' time is then read from the runs themselves).
  if (m.devices.empty() && m.rpc.empty()) m.spec = MachineSpecFromProfile(doctor.profile);
  m.identity.engine = m.engine_line;
  m.identity.machine = m.machine_line;
  t.engine = std::make_unique<LlamaBenchEngine>(info, LlamaBenchOptions{});
  return t;
}

}  // namespace moetune
