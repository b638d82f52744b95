#include "cli/machine_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "cli/validators.h"
#include "engine/rpc_host.h"
#include "hw/cpu_topology.h"
#include "hw/machine_profile.h"
#include "hw/system_memory.h"
#include "speed/presets.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {

CLI::Validator MachinePresetsValidator() {
  return Accepted(
      [](const std::string& s) {
        MachineSpec scratch;
        return ApplyMachinePresets(s, &scratch);
      },
      "PRESET[,PRESET...]");
}

void AddMachineFlags(CLI::App* cmd, MachineFlags* f, bool with_vram, bool with_profile) {
  cmd->add_option("--machine", f->machine,
                  "What-if machine from presets, e.g. rtx4070-12g,ddr4-3200-2ch,6p8e (see `moetune "
                  "machines`)")
      ->check(MachinePresetsValidator());
  cmd->add_option("--gpu-bw", f->gpu_bw, "What-if GPU memory bandwidth, e.g. 504GB/s")
      ->check(Parses(ParseBandwidthGbps, "RATE"));
  cmd->add_option("--pcie-bw", f->pcie_bw, "What-if host-to-GPU copy rate (pinned), e.g. 25GB/s")
      ->check(Parses(ParseBandwidthGbps, "RATE"));
  cmd->add_option("--ram-bw", f->ram_bw, "What-if RAM read bandwidth, e.g. 40GB/s")
      ->check(Parses(ParseBandwidthGbps, "RATE"));
  cmd->add_option("--cpu", f->cpu, "What-if CPU cores, e.g. 6P+8E, 8P+16E/smt2, 16C/smt2")
      ->check(Accepted(
          [](const std::string& s) {
            CpuSpec scratch;
            return ParseCpuShape(s, &scratch);
          },
          "CORES"));
  cmd->add_option("--spill", f->spill,
                  "GPU overflow: strict (allocations fail) or silent (spill to host memory)")
      ->check(Parses(ParseSpillMode, "strict|silent"));
  if (with_vram) AddGpuBudgetFlags(cmd, &f->gpu);
  if (with_profile)
    cmd->add_option("--profile", f->profile, "Machine profile (default: the doctor's)");
}

std::vector<CLI::Option*> AddGpuBudgetFlags(CLI::App* cmd, GpuBudgetOptions* o, bool device_lists) {
  const CLI::Validator size = device_lists ? ByteSizeList(0, kMaxMemoryBytes, kMaxPlanDevices)
                                           : ByteSize(0, kMaxMemoryBytes);
  const std::string each =
      device_lists ? "; several devices: one size per device, in the engine's order (24GiB,12GiB)"
                   : "";
  std::vector<CLI::Option*> added;
  added.push_back(
      cmd->add_option("--vram", o->vram,
                      "The GPU's total memory, e.g. 12GiB (default: the doctor's profile, or the "
                      "what-if GPU's); 0 for no GPU" +
                          each)
          ->check(size));
  added.push_back(
      cmd->add_option("--vram-used", o->vram_used,
                      "GPU memory other programs hold now, e.g. 1.7GiB (default: measured by the "
                      "doctor; a what-if GPU assumes an idle desktop's share)" +
                          each)
          ->check(size));
  added.push_back(
      cmd->add_option("--reserve", o->reserve,
                      "GPU memory to keep free beyond that, for programs that start later "
                      "(default 0)" +
                          each)
          ->check(size));
  return added;
}

std::string GpuBudgetFlagsText(const GpuBudgetOptions& o) {
  std::string out;
  for (const auto& [flag, value] : {std::pair<const char*, const std::string&>{"--vram", o.vram},
                                    {"--vram-used", o.vram_used},
                                    {"--reserve", o.reserve}}) {
    if (!value.empty()) out += fmt::format(" {} {}", flag, value);
  }
  return out;
}

GpuBudgetFlags ParsedGpuBudgetFlags(const GpuBudgetOptions& o) {
  GpuBudgetFlags f;
  auto bytes = [](const std::string& s) -> std::optional<int64_t> {
    if (s.empty()) return std::nullopt;
    auto v = ParseBytes(s);
    return v.ok() ? std::optional<int64_t>(v->count()) : std::nullopt;
  };
  f.vram = bytes(o.vram);
  f.vram_used = bytes(o.vram_used);
  f.reserve = bytes(o.reserve);
  return f;
}

bool HasWhatIfMachine(const MachineFlags& f) {
  return !f.machine.empty() || !f.gpu_bw.empty() || !f.pcie_bw.empty() || !f.ram_bw.empty() ||
         !f.cpu.empty() || !f.spill.empty();
}

bool HasWhatIf(const MachineFlags& f) { return HasWhatIfMachine(f) || f.gpu.any(); }

namespace {

// A GPU flag without a GPU: assume an RTX 4070-class card and say so.
void EnsureGpu(MachineSpec* s, const char* flag) {
  if (s->accel()) return;
  (void)ApplyMachinePreset("rtx4070-12g", s);
  s->notes.push_back(
      fmt::format("{} without a GPU: assuming RTX 4070-class figures for the rest "
                  "(add --machine GPU_PRESET)",
                  flag));
}

Error FlagError(const char* flag, const Error& e) {
  return Error(ErrorKind::kInvalidArgument, fmt::format("{}: {}", flag, e.message()));
}

}  // namespace

namespace {

// The machine profile (--profile, else the default one) and its calibration;
// without one, this machine's CPU and RAM as the kernel describes them.
Status LoadProfile(const MachineFlags& f, ResolvedMachine* r) {
  r->profile_path = f.profile.empty() ? DefaultMachineProfilePath() : f.profile;
  if (!r->profile_path.empty()) {
    auto p = LoadMachineProfile(r->profile_path);
    if (p.ok()) {
      r->profile_found = true;
      r->spec = MachineSpecFromProfile(*p);
      if (!p->calibration.is_null()) {
        auto c = CalibrationRecordFromJson(p->calibration);
        if (c.ok()) {
          r->calibration = *c;
          r->constants = c->constants;
        } else {
          r->spec.notes.push_back("ignoring the profile's calibration: " + c.error().message());
        }
      }
    } else if (p.error().kind() != ErrorKind::kNotFound || !f.profile.empty()) {
      return p.take_error();
    }
  }
  if (!r->profile_found) {
    // This machine's CPU and RAM as the kernel describes them (no probing); its
    // GPUs and RAM bandwidth are unknown until `moetune doctor` runs.
    MachineProfile live;
    live.hostname = "this machine";
    live.created_at = "now, without a doctor profile";
    live.cpu = ReadCpuTopology(SysRoot("/"), /*use_hwloc=*/false);
    live.memory = ReadSystemMemory(SysRoot("/"));
    r->spec = live.cpu.physical_cores > 0 ? MachineSpecFromProfile(live) : DefaultMachineSpec();
    r->spec.notes.push_back(
        "no machine profile: CPU from the kernel, no GPU, RAM bandwidth assumed 40 GB/s; run "
        "`moetune doctor` to describe this machine");
  }
  return OkStatus();
}

// The what-if flags (--machine, --gpu-bw, --pcie-bw, --ram-bw, --cpu, --spill)
// applied to `spec`; the GPU memory flags are applied by ApplyGpuBudget.
Status ApplyWhatIfFlags(const MachineFlags& f, MachineSpec* spec) {
  if (!f.machine.empty()) {
    auto st = ApplyMachinePresets(f.machine, spec);
    if (!st.ok()) return FlagError("--machine", st.error());
  }
  if (!f.gpu_bw.empty()) {
    auto v = ParseBandwidthGbps(f.gpu_bw);
    if (!v.ok()) return FlagError("--gpu-bw", v.error());
    EnsureGpu(spec, "--gpu-bw");
    spec->accel()->mem_bw_gbps = *v;
  }
  if (!f.pcie_bw.empty()) {
    auto v = ParseBandwidthGbps(f.pcie_bw);
    if (!v.ok()) return FlagError("--pcie-bw", v.error());
    EnsureGpu(spec, "--pcie-bw");
    spec->accel()->link_gbps = *v;
    spec->accel()->link_pageable_gbps = *v * 0.78;
  }
  if (!f.ram_bw.empty()) {
    auto v = ParseBandwidthGbps(f.ram_bw);
    if (!v.ok()) return FlagError("--ram-bw", v.error());
    spec->ram.read_gbps = *v;
    spec->ram.source = "--ram-bw " + f.ram_bw;
  }
  if (!f.cpu.empty()) {
    auto st = ParseCpuShape(f.cpu, &spec->cpu);
    if (!st.ok()) return FlagError("--cpu", st.error());
  }
  if (!f.gpu.vram.empty() || !f.gpu.vram_used.empty()) EnsureGpu(spec, "--vram");
  if (!f.spill.empty()) {
    auto v = ParseSpillMode(f.spill);
    if (!v.ok()) return v.take_error();
    spec->spill = *v;
  }
  return OkStatus();
}

// The GPU memory model of the machine: the flags over the spec's GPU (a
// preset's total and idle-desktop share, or the profile's measurement), then
// written back into the spec, so that every figure has one source.
Status ApplyGpuBudget(const MachineFlags& f, bool profile_found, ResolvedMachine* r) {
  GpuBudgetDefaults d;
  MachineSpec& spec = r->spec;
  const bool preset = !f.machine.empty();
  d.what_if_total = spec.accel() ? spec.accel()->vram_total : 0;
  d.what_if_from = preset ? "--machine " + f.machine
                          : (profile_found ? std::string("the machine profile, measured by "
                                                         "moetune doctor")
                                           : std::string("no GPU in the machine description"));
  if (spec.accel()) {
    d.what_if_used = std::max<int64_t>(0, spec.accel()->vram_total - spec.accel()->vram_free);
    d.what_if_used_from =
        preset ? "assumed for an idle desktop: the display and driver hold about 7% of a "
                 "consumer card (--vram-used SIZE to say otherwise)"
               : "the machine profile, measured by moetune doctor";
  }
  MOETUNE_ASSIGN_OR_RETURN(r->gpu, ResolveGpuBudget(ParsedGpuBudgetFlags(f.gpu), d));
  if (spec.accel()) {
    spec.accel()->vram_total = r->gpu.total;
    spec.accel()->vram_free = r->gpu.free();
  }
  spec.reserve = r->gpu.reserve;
  return OkStatus();
}

}  // namespace

bool SeveralDevices(const GpuBudgetOptions& g) {
  return g.vram.find(',') != std::string::npos || g.vram_used.find(',') != std::string::npos ||
         g.reserve.find(',') != std::string::npos;
}

Status RpcServersOnly(const std::vector<DeviceBudget>& devices, const std::string& command) {
  const auto local = std::count_if(devices.begin(), devices.end(), [](const DeviceBudget& d) {
    return d.kind != DeviceKind::kRpc;
  });
  if (local == 0) return OkStatus();
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("{} --rpc: --vram gives {} more size(s) than --rpc names servers, and "
                           "local GPUs together with RPC servers are not supported by {} yet: "
                           "give one size per server, or plan the whole set with `moetune plan "
                           "--vram A,B,... --rpc ...`",
                           command, local, command));
}

Result<std::vector<DeviceBudget>> DeviceBudgetsFromFlags(const GpuBudgetOptions& g,
                                                         const std::string& rpc) {
  const std::vector<int64_t> totals = ByteSizesOf(g.vram);
  if (g.vram.empty() || (totals.size() < 2 && rpc.empty()))
    return Error(ErrorKind::kInvalidArgument,
                 rpc.empty() ? "several devices need --vram with one size per device (--vram "
                               "24GiB,12GiB)"
                             : "RPC devices need --vram with one size per server of --rpc, in its "
                               "order (--vram 24GiB,12GiB): the memory each ggml-rpc-server "
                               "offers");
  auto per_device = [&](const char* flag, const std::string& v) -> Result<std::vector<int64_t>> {
    if (v.empty()) return std::vector<int64_t>(totals.size(), 0);
    const std::vector<int64_t> l = ByteSizesOf(v);
    if (l.size() == 1) return std::vector<int64_t>(totals.size(), l[0]);
    if (l.size() != totals.size())
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{} gives {} sizes for the {} devices of --vram: give one size for "
                               "every device or one per device",
                               flag, l.size(), totals.size()));
    return l;
  };
  MOETUNE_ASSIGN_OR_RETURN(const std::vector<int64_t> used, per_device("--vram-used", g.vram_used));
  MOETUNE_ASSIGN_OR_RETURN(const std::vector<int64_t> reserve, per_device("--reserve", g.reserve));
  std::vector<std::string> servers;
  if (!rpc.empty()) {
    MOETUNE_ASSIGN_OR_RETURN(servers, ParseRpcList(rpc));
  }
  if (servers.size() > totals.size())
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("--rpc names {} servers for the {} devices of --vram: give one "
                             "size per local GPU, then one per server",
                             servers.size(), totals.size()));
  // The engine lists its own GPUs first, then the servers' devices.
  const size_t local = totals.size() - servers.size();
  std::vector<DeviceBudget> devices;
  for (size_t i = 0; i < totals.size(); ++i) {
    GpuMemoryBudget b;
    b.total = totals[i];
    b.used = used[i];
    b.reserve = reserve[i];
    b.total_from = "--vram";
    b.used_from = g.vram_used.empty() ? "assumed: nothing held" : "--vram-used";
    b.reserve_from = g.reserve.empty() ? "default" : "--reserve";
    if (b.used > b.total || b.reserve > b.free())
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("device {}: {} held and {} kept free exceed its {} (--vram, "
                               "--vram-used, --reserve): lower them",
                               i, FormatBytes(Bytes(b.used)), FormatBytes(Bytes(b.reserve)),
                               FormatBytes(Bytes(b.total))));
    DeviceBudget d;
    const bool rpc_device = i >= local;
    d.name = fmt::format("{}{}", rpc_device ? "RPC" : "CUDA", rpc_device ? i - local : i);
    d.kind = rpc_device ? DeviceKind::kRpc : DeviceKind::kCuda;
    d.free = b.free();
    d.reserve = b.reserve;
    std::cerr << ForTerminal(fmt::format("moetune: {}: {}\n", d.name, GpuBudgetText(b)));
    devices.push_back(d);
  }
  return devices;
}

Result<ResolvedMachine> ResolveMachine(const MachineFlags& f) {
  ResolvedMachine r;
  MOETUNE_TRY(LoadProfile(f, &r));
  const std::string base = r.spec.label;
  const CpuSpec cpu_before = r.spec.cpu;
  MOETUNE_TRY(ApplyWhatIfFlags(f, &r.spec));
  MOETUNE_TRY(ApplyGpuBudget(f, r.profile_found, &r));
  const bool cpu_replaced =
      r.spec.cpu.name != cpu_before.name || r.spec.cpu.p_cores != cpu_before.p_cores ||
      r.spec.cpu.e_cores != cpu_before.e_cores || r.spec.cpu.smt != cpu_before.smt;
  if (cpu_replaced && r.calibration) {
    // Thread scaling calibrated here describes this machine's cores and load, not
    // the what-if CPU's: use the documented defaults for it.
    const CalibrationConstants defaults;
    r.constants.thread_efficiency_prefill = defaults.thread_efficiency_prefill;
    r.constants.thread_efficiency_decode = defaults.thread_efficiency_decode;
    r.constants.smt_gain = defaults.smt_gain;
    r.spec.notes.push_back(
        "what-if CPU: default thread scaling (the calibrated one is this CPU's)");
  }
  if (HasWhatIf(f)) {
    r.spec.what_if = true;
    r.spec.label = fmt::format("what-if ({}) starting from {}", r.spec.Describe(), base);
  }
  r.uncertainty = r.calibration && !r.spec.what_if ? CalibratedUncertainty(*r.calibration)
                                                   : UncalibratedUncertainty();
  return r;
}

Result<GpuMemoryBudget> ResolveCommandGpuBudget(const MachineFlags& f,
                                                std::optional<bool> engine_has_gpu) {
  if (HasWhatIfMachine(f)) {
    MOETUNE_ASSIGN_OR_RETURN(ResolvedMachine m, ResolveMachine(f));
    return m.gpu;
  }
  GpuBudgetDefaults d;
  d.engine_has_gpu = engine_has_gpu;
  d.profile_path = f.profile.empty() ? DefaultMachineProfilePath() : f.profile;
  std::optional<MachineProfile> profile;
  if (d.profile_path.empty()) {
    d.profile_error = "no machine profile path ($HOME is not set)";
  } else if (auto p = LoadMachineProfile(d.profile_path); p.ok()) {
    profile = std::move(p).value();
    d.profile = &*profile;
  } else {
    d.profile_error = p.error().message();
  }
  return ResolveGpuBudget(ParsedGpuBudgetFlags(f.gpu), d);
}

void PrintGpuBudget(const GpuMemoryBudget& budget) {
  std::cerr << ForTerminal("moetune: " + GpuBudgetText(budget) + "\n");
}

}  // namespace moetune
