#include "doctor/doctor.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>

#include "hw/bandwidth.h"
#include "hw/bandwidth_reference.h"
#include "hw/gpu_amd.h"
#include "hw/gpu_nvidia.h"
#include "hw/platform.h"
#include "util/timestamp.h"
#include "util/units.h"

namespace moetune {
namespace {

std::string Hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "";
  return buf;
}

// One pinned thread per allowed physical core (its first allowed CPU): more
// threads than cores do not add bandwidth and SMT siblings add noise.
std::vector<int> BandwidthCpus(const CpuTopology& cpu) {
  std::vector<int> out;
  for (const auto& core : cpu.cores) {
    for (int c : core.cpus) {
      if (std::binary_search(cpu.allowed_cpus.begin(), cpu.allowed_cpus.end(), c)) {
        out.push_back(c);
        break;
      }
    }
  }
  if (cpu.cpu_quota) {
    const size_t cap = static_cast<size_t>(std::max(1, static_cast<int>(*cpu.cpu_quota)));
    if (out.size() > cap) out.resize(cap);
  }
  return out;
}

// The engine the platform check judges: the folder named, else the variable,
// else the tool discovery found.
std::string EnginePath(const DoctorOptions& o) {
  if (!o.engine_dir.empty()) return o.engine_dir;
  if (auto it = o.env.find("MOETUNE_LLAMA_DIR"); it != o.env.end() && !it->second.empty())
    return it->second;
  return o.engine ? o.engine->llama_bench : "";
}

}  // namespace

DoctorReport RunDoctor(const DoctorOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  DoctorReport r;
  MachineProfile& p = r.profile;
  p.created_at = NowUtcIso8601();
  p.hostname = Hostname();
  p.moetune_version = MOETUNE_VERSION;

  NvidiaScanOptions nv;
  nv.library = options.nvml_library;
  nv.proc_root = options.root;
  const NvidiaScan nvidia = ScanNvidiaGpus(nv);
  p.gpus = nvidia.gpus;
  p.nvidia_driver_version = nvidia.driver_version;
  p.gpu_notes = nvidia.notes;
  const AmdScan amd = ScanAmdGpus(options.root);
  for (auto g : amd.gpus) p.gpus.push_back(std::move(g));
  // No DRM at all is only worth a note when no GPU was found another way.
  if (p.gpus.empty()) p.gpu_notes.insert(p.gpu_notes.end(), amd.notes.begin(), amd.notes.end());

  p.cpu = ReadCpuTopology(options.root);
  p.memory = ReadSystemMemory(options.root);

  if (options.measure_bandwidth) {
    BandwidthOptions bo;
    bo.cpus = BandwidthCpus(p.cpu);
    bo.llc_bytes = p.cpu.llc_bytes;
    bo.available_ram_bytes = p.memory.available_bytes;
    bo.time_budget_s = options.bandwidth_budget_s;
    auto bw = MeasureReadBandwidth(bo);
    if (bw.ok()) {
      p.bandwidth = *bw;
      if (options.sysbench_reference) {
        // Two short rounds with as many threads; the best one is the reference.
        auto sb = RunSysbenchRead(bw->threads, bw->buffer_bytes, 2);
        if (sb.ok()) {
          r.sysbench = *sb;
        } else {
          r.reference_notes.push_back("sysbench reference not run: " + sb.error().message() +
                                      " (install sysbench for an independent lower bound)");
        }
      }
    } else {
      p.notes.push_back("memory bandwidth not measured: " + bw.error().message());
    }
  } else {
    p.notes.push_back("memory bandwidth not measured (--no-bandwidth)");
  }

  EngineTrapInputs ti;
  ti.env = options.env;
  ti.root = options.root;
  ti.nvidia_gpus = static_cast<int>(nvidia.gpus.size());
  ti.amd_gpus = static_cast<int>(amd.gpus.size());
  if (options.engine) {
    r.engine = options.engine;
    ti.engine = r.engine;
    if (!r.engine->ran) p.notes.push_back("engine not probed: " + r.engine->note);
  }
  r.traps = FindEngineTraps(ti);
  r.platform = DetectPlatform(ReadPlatformInputs(options.root, options.env, EnginePath(options)));
  VerdictInputs vi{p, r.traps, std::nullopt};
  vi.platform = r.platform;
  r.verdicts = MakeVerdicts(vi);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void AddModelToReport(const ModelNeeds& model, DoctorReport* report) {
  report->model = model;
  VerdictInputs in{report->profile, report->traps, model};
  in.platform = report->platform;
  if (!report->profile.gpus.empty()) {
    report->model_fit = FitExperts(
        model, report->profile.TotalFreeVramBytes() -
                   in.vram_margin_bytes * static_cast<int64_t>(report->profile.gpus.size()));
  }
  report->verdicts = MakeVerdicts(in);
}

std::vector<std::string> MissingSources(const DoctorReport& r) {
  std::vector<std::string> out;
  auto add = [&](const char* area, const std::vector<std::string>& notes) {
    for (const auto& n : notes) out.push_back(fmt::format("{}: {}", area, n));
  };
  add("gpu", r.profile.gpu_notes);
  for (const auto& g : r.profile.gpus) add(fmt::format("gpu{}", g.index).c_str(), g.notes);
  add("cpu", r.profile.cpu.notes);
  add("memory", r.profile.memory.notes);
  add("doctor", r.profile.notes);
  return out;
}

}  // namespace moetune
