#include "cli/machine_flags.h"

#include <fmt/format.h>

#include "cli/validators.h"
#include "hw/cpu_topology.h"
#include "hw/machine_profile.h"
#include "hw/system_memory.h"
#include "speed/presets.h"
#include "util/units.h"

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
  if (with_vram) {
    cmd->add_option("--vram", f->vram, "What-if free GPU memory, e.g. 12GiB")
        ->check(ByteSize(0, kMaxMemoryBytes));
    cmd->add_option("--reserve", f->reserve, "GPU memory other programs hold, e.g. 1.5GiB")
        ->check(ByteSize(0, kMaxMemoryBytes));
  }
  if (with_profile)
    cmd->add_option("--profile", f->profile, "Machine profile (default: the doctor's)");
}

bool HasWhatIf(const MachineFlags& f) {
  return !f.machine.empty() || !f.gpu_bw.empty() || !f.pcie_bw.empty() || !f.ram_bw.empty() ||
         !f.cpu.empty() || !f.spill.empty() || !f.vram.empty() || !f.reserve.empty();
}

namespace {

// A GPU flag without a GPU: assume an RTX 4070-class card and say so.
void EnsureGpu(MachineSpec* s, const char* flag) {
  if (s->accel) return;
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

// The what-if flags (--machine, --gpu-bw, --pcie-bw, --ram-bw, --cpu, --vram,
// --reserve, --spill) applied to `spec`.
Status ApplyWhatIfFlags(const MachineFlags& f, MachineSpec* spec) {
  if (!f.machine.empty()) {
    auto st = ApplyMachinePresets(f.machine, spec);
    if (!st.ok()) return FlagError("--machine", st.error());
  }
  if (!f.gpu_bw.empty()) {
    auto v = ParseBandwidthGbps(f.gpu_bw);
    if (!v.ok()) return FlagError("--gpu-bw", v.error());
    EnsureGpu(spec, "--gpu-bw");
    spec->accel->mem_bw_gbps = *v;
  }
  if (!f.pcie_bw.empty()) {
    auto v = ParseBandwidthGbps(f.pcie_bw);
    if (!v.ok()) return FlagError("--pcie-bw", v.error());
    EnsureGpu(spec, "--pcie-bw");
    spec->accel->link_gbps = *v;
    spec->accel->link_pageable_gbps = *v * 0.78;
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
  if (!f.vram.empty()) {
    auto v = ParseBytes(f.vram);
    if (!v.ok()) return FlagError("--vram", v.error());
    EnsureGpu(spec, "--vram");
    spec->accel->vram_free = v->count();
    spec->accel->vram_total = std::max(spec->accel->vram_total, v->count());
  }
  if (!f.reserve.empty()) {
    auto v = ParseBytes(f.reserve);
    if (!v.ok()) return FlagError("--reserve", v.error());
    spec->reserve = v->count();
  }
  if (!f.spill.empty()) {
    auto v = ParseSpillMode(f.spill);
    if (!v.ok()) return v.take_error();
    spec->spill = *v;
  }
  return OkStatus();
}

}  // namespace

Result<ResolvedMachine> ResolveMachine(const MachineFlags& f) {
  ResolvedMachine r;
  MOETUNE_TRY(LoadProfile(f, &r));
  const std::string base = r.spec.label;
  const CpuSpec cpu_before = r.spec.cpu;
  MOETUNE_TRY(ApplyWhatIfFlags(f, &r.spec));
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

}  // namespace moetune
