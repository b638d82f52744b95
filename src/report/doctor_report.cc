#include "report/doctor_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "util/units.h"
#include "util/utf8.h"

namespace moetune {

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
  const Platform& pf = r.platform;
  j["platform"] = {{"kernel", std::string(HostKernelName(pf.kernel))},
                   {"evidence", pf.evidence},
                   {"wsl_distro", pf.wsl_distro},
                   {"engine_path", pf.engine_path},
                   {"windows_engine", pf.windows_engine},
                   {"shared_memory_gpu", pf.shared_memory_gpu},
                   {"shared_memory_evidence", pf.shared_memory_evidence}};
  if (r.engine) {
    j["engine"] = {{"llama_bench", r.engine->llama_bench},
                   {"probed", r.engine->ran},
                   {"devices", r.engine->devices},
                   {"has_cuda", r.engine->has_cuda},
                   {"has_vulkan", r.engine->has_vulkan},
                   {"has_rocm", r.engine->has_rocm},
                   {"cuda_backend", r.engine->cuda_backend},
                   {"backends", r.engine->backends},
                   {"backend_source", r.engine->backend_source},
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

namespace {

// One line under the header when the platform is more than plain Linux.
std::string PlatformLine(const Platform& p) {
  std::string line;
  if (p.kernel == HostKernel::kWsl1) line = "WSL 1 (" + p.evidence + ")";
  if (p.kernel == HostKernel::kWsl2) line = "WSL 2 (" + p.evidence + ")";
  if (!p.wsl_distro.empty()) line += ", distribution " + ForTerminalField(p.wsl_distro);
  if (p.shared_memory_gpu)
    line += (line.empty() ? "" : "; ") + ("GPU sharing RAM (" + p.shared_memory_evidence + ")");
  return line.empty() ? "" : "platform: " + ForTerminalField(line) + "\n";
}

// The GPUs: memory, who holds it, the PCIe link and the memory bus.
std::string GpusText(const MachineProfile& p) {
  std::string out;
  if (p.gpus.empty()) out += "  none found\n";
  for (const auto& n : p.gpu_notes) out += fmt::format("  {}\n", n);
  for (const auto& g : p.gpus) {
    out +=
        fmt::format("  [{}] {} ({}): {} total, {} free, {} held by others\n", g.index,
                    ForTerminalField(g.name), g.vendor, FormatBytes(Bytes(g.total_bytes)),
                    FormatBytes(Bytes(g.free_bytes)), FormatBytes(Bytes(g.used_by_others_bytes)));
    for (const auto& proc : g.processes) {
      out += fmt::format("      pid {:<8} {:<24} {}\n", proc.pid,
                         proc.name.empty() ? "?" : ForTerminalField(proc.name),
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
  return out;
}

// RAM, swap, the measured read bandwidth and its references.
std::string MemoryText(const DoctorReport& r) {
  const MachineProfile& p = r.profile;
  std::string out;
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
  return out;
}

}  // namespace

std::string FormatDoctorText(const DoctorReport& r) {
  const MachineProfile& p = r.profile;
  std::string out = fmt::format("moetune doctor: {} ({})\n{}\nGPUs\n", p.hostname, p.created_at,
                                PlatformLine(r.platform));
  out += GpusText(p);
  const CpuTopology& c = p.cpu;
  out += fmt::format("\nCPU\n  {}: {} socket(s), {} physical cores, {} online CPUs",
                     ForTerminalField(c.model_name), c.sockets, c.physical_cores, c.online_cpus);
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
  out += MemoryText(r);
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
