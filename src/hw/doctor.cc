#include "hw/doctor.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>

#include "hw/bandwidth.h"
#include "hw/bandwidth_reference.h"
#include "hw/gpu_amd.h"
#include "hw/gpu_nvidia.h"
#include "util/units.h"

namespace moetune {
namespace {

std::string NowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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

}  // namespace

DoctorReport RunDoctor(const DoctorOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  DoctorReport r;
  MachineProfile& p = r.profile;
  p.created_at = NowUtc();
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
  r.verdicts = MakeVerdicts({p, r.traps, std::nullopt});
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void AddModelToReport(const ModelNeeds& model, DoctorReport* report) {
  report->model = model;
  VerdictInputs in{report->profile, report->traps, model};
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

nlohmann::json DoctorReportToJson(const DoctorReport& r) {
  nlohmann::json j = MachineProfileToJson(r.profile);
  nlohmann::json verdicts = nlohmann::json::array();
  for (const auto& v : r.verdicts) {
    verdicts.push_back({{"id", v.id},
                        {"impact", v.impact},
                        {"severity", v.severity},
                        {"title", v.title},
                        {"detail", v.detail},
                        {"fix", v.fix}});
  }
  j["verdicts"] = verdicts;
  if (r.engine) {
    j["engine"] = {{"llama_bench", r.engine->llama_bench},
                   {"probed", r.engine->ran},
                   {"devices", r.engine->devices},
                   {"has_cuda", r.engine->has_cuda},
                   {"has_vulkan", r.engine->has_vulkan},
                   {"has_rocm", r.engine->has_rocm},
                   {"note", r.engine->note}};
  } else {
    j["engine"] = nullptr;
  }
  if (r.model) {
    nlohmann::json m = {{"name", r.model->name},
                        {"ctx", r.model->n_ctx},
                        {"expert_bytes_by_layer", r.model->expert_bytes_by_layer},
                        {"gpu_fixed_bytes", r.model->gpu_fixed_bytes},
                        {"host_fixed_bytes", r.model->host_fixed_bytes}};
    if (r.model_fit) {
      m["fit"] = {{"moe_layers", r.model_fit->moe_layers},
                  {"gpu_expert_layers", r.model_fit->gpu_expert_layers},
                  {"n_cpu_moe", r.model_fit->n_cpu_moe},
                  {"gpu_bytes", r.model_fit->gpu_bytes},
                  {"cpu_expert_bytes", r.model_fit->cpu_expert_bytes},
                  {"fixed_part_fits", r.model_fit->fixed_part_fits}};
    }
    j["model"] = m;
  } else {
    j["model"] = nullptr;
  }
  nlohmann::json refs = {
      {"measured_gbps", r.profile.bandwidth ? nlohmann::json(r.profile.bandwidth->read_gbps)
                                            : nlohmann::json(nullptr)},
      {"sysbench", nullptr},
      {"cpu_decode", nullptr},
      {"notes", r.reference_notes}};
  if (r.sysbench) {
    refs["sysbench"] = {{"read_gbps", r.sysbench->read_gbps},
                        {"threads", r.sysbench->threads},
                        {"rounds", r.sysbench->rounds},
                        {"command", r.sysbench->command}};
  }
  if (r.decode) {
    refs["cpu_decode"] = {{"gbps", r.decode->gbps},
                          {"tokens_per_second", r.decode->tokens_per_second},
                          {"bytes_per_token", r.decode->bytes_per_token},
                          {"threads", r.decode->threads},
                          {"command", r.decode->command},
                          {"note", r.decode->note}};
  }
  j["bandwidth_references"] = refs;
  j["missing_sources"] = MissingSources(r);
  j["doctor_seconds"] = r.seconds;
  return j;
}

std::string FormatDoctorText(const DoctorReport& r) {
  const MachineProfile& p = r.profile;
  std::string out = fmt::format("moetune doctor: {} ({})\n\nGPUs\n", p.hostname, p.created_at);
  if (p.gpus.empty()) out += "  none found\n";
  for (const auto& n : p.gpu_notes) out += fmt::format("  {}\n", n);
  for (const auto& g : p.gpus) {
    out +=
        fmt::format("  [{}] {} ({}): {} total, {} free, {} held by others\n", g.index, g.name,
                    g.vendor, FormatBytes(Bytes(g.total_bytes)), FormatBytes(Bytes(g.free_bytes)),
                    FormatBytes(Bytes(g.used_by_others_bytes)));
    for (const auto& proc : g.processes) {
      out +=
          fmt::format("      pid {:<8} {:<24} {}\n", proc.pid, proc.name.empty() ? "?" : proc.name,
                      proc.used_bytes ? FormatBytes(Bytes(*proc.used_bytes)) : "amount unknown");
    }
    if (g.pcie_gen_max > 0) {
      out += fmt::format(
          "      PCIe gen {}/{} x{}/{} (current/max), {:.1f} GB/s per direction at max\n",
          g.pcie_gen_current, g.pcie_gen_max, g.pcie_width_current, g.pcie_width_max,
          g.pcie_bandwidth_gbps);
    }
    if (g.peak_bandwidth_gbps > 0) {
      out += fmt::format("      memory {}-bit at {} MHz: {:.0f} GB/s peak\n",
                         g.memory_bus_width_bits, g.memory_clock_max_mhz, g.peak_bandwidth_gbps);
    }
  }
  const CpuTopology& c = p.cpu;
  out += fmt::format("\nCPU\n  {}: {} socket(s), {} physical cores, {} online CPUs", c.model_name,
                     c.sockets, c.physical_cores, c.online_cpus);
  if (c.hybrid)
    out += fmt::format(" ({} P + {} E cores, from {})", c.performance_cores, c.efficiency_cores,
                       c.kind_source);
  out += fmt::format("\n  usable: {} logical CPUs ({}) on {} physical cores", c.logical_cpus,
                     FormatCpuList(c.allowed_cpus), c.allowed_physical_cores);
  if (c.cpu_quota) out += fmt::format(", cgroup CPU quota {:.2f}", *c.cpu_quota);
  out +=
      fmt::format("\n  last-level cache {} x {}\n", c.l3_domains, FormatBytes(Bytes(c.llc_bytes)));
  out += "  threads worth trying:\n";
  for (const auto& s : c.suggested_threads)
    out += fmt::format("    -t {:<3} {}: {}\n", s.threads, s.label, s.reason);
  out += fmt::format("  llama.cpp default: -t {} ({})\n", c.llama_default_threads,
                     c.llama_default_reason);
  const SystemMemory& m = p.memory;
  out += fmt::format(
      "\nMemory\n  RAM {} total, {} available; swap {}\n", FormatBytes(Bytes(m.total_bytes)),
      FormatBytes(Bytes(m.available_bytes)),
      m.swap_total_bytes > 0 ? FormatBytes(Bytes(m.swap_total_bytes)) : std::string("none"));
  if (p.bandwidth) {
    out += fmt::format(
        "  read bandwidth {:.1f} GB/s (best of {} passes, median {:.1f}; {} threads, {}, {} "
        "buffer, {:.2f} s)\n",
        p.bandwidth->read_gbps, p.bandwidth->pass_gbps.size(), p.bandwidth->median_gbps,
        p.bandwidth->threads, p.bandwidth->kernel, FormatBytes(Bytes(p.bandwidth->buffer_bytes)),
        p.bandwidth->seconds);
    if (r.sysbench) {
      out += fmt::format(
          "  reference: sysbench memory read {:.1f} GB/s with {} threads (a lower bound: one "
          "scalar load at a time)\n",
          r.sysbench->read_gbps, r.sysbench->threads);
    }
    if (r.decode) {
      out += fmt::format(
          "  reference: CPU-only decode {:.1f} t/s x {} per token = {:.1f} GB/s achieved by "
          "llama.cpp ({} threads){}\n    command: {}\n",
          r.decode->tokens_per_second, FormatBytes(Bytes(r.decode->bytes_per_token)),
          r.decode->gbps, r.decode->threads, r.decode->note.empty() ? "" : "; " + r.decode->note,
          fmt::join(r.decode->command, " "));
    }
    for (const auto& n : r.reference_notes) out += fmt::format("  ({})\n", n);
  }
  if (r.engine) {
    out += fmt::format("\nEngine\n  {}\n", r.engine->llama_bench.empty() ? "llama-bench not found"
                                                                         : r.engine->llama_bench);
    if (r.engine->ran) {
      out += r.engine->devices.empty()
                 ? "  devices: none (CPU only)\n"
                 : fmt::format("  devices: {}\n", fmt::join(r.engine->devices, "; "));
    }
  }
  if (r.model) {
    out += fmt::format("\nModel {} at {} tokens\n", r.model->name, r.model->n_ctx);
    if (r.model_fit) {
      out += fmt::format(
          "  fits now with --n-cpu-moe {} ({} of {} expert layers on the GPU, {} of experts in "
          "RAM)\n",
          r.model_fit->n_cpu_moe, r.model_fit->gpu_expert_layers, r.model_fit->moe_layers,
          FormatBytes(Bytes(r.model_fit->cpu_expert_bytes)));
    }
  }
  out += "\nVerdicts (highest impact first)\n";
  if (r.verdicts.empty()) out += "  none: nothing on this machine stands in the way\n";
  int i = 0;
  for (const auto& v : r.verdicts) {
    out += fmt::format("  {}. [{}] {}\n     {}\n     fix: {}\n", ++i, v.severity, v.title, v.detail,
                       v.fix);
  }
  const auto missing = MissingSources(r);
  if (!missing.empty()) {
    out += "\nMissing or partial sources\n";
    for (const auto& s : missing) out += fmt::format("  - {}\n", s);
  }
  return out;
}

}  // namespace moetune
