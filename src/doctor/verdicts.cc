#include "doctor/verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "config/flags.h"
#include "config/server_argv.h"
#include "doctor/platform_verdicts.h"
#include "util/units.h"

namespace moetune {

ExpertFit FitExperts(const ModelNeeds& model, int64_t vram_budget_bytes) {
  ExpertFit fit;
  const auto& e = model.expert_bytes_by_layer;
  const int n = static_cast<int>(e.size());
  fit.moe_layers =
      static_cast<int>(std::count_if(e.begin(), e.end(), [](int64_t b) { return b > 0; }));
  int64_t left = vram_budget_bytes - model.gpu_fixed_bytes;
  fit.fixed_part_fits = left >= 0;
  // --n-cpu-moe keeps a prefix of layers on the CPU, so the GPU holds a suffix:
  // walk from the last layer down while the next layer's experts still fit.
  int first_gpu = n;
  while (first_gpu > 0 && left >= e[static_cast<size_t>(first_gpu - 1)]) {
    left -= e[static_cast<size_t>(first_gpu - 1)];
    --first_gpu;
  }
  // n_cpu_moe counts layers from 0; the trailing dense layers need no override.
  fit.n_cpu_moe = first_gpu;
  for (int i = 0; i < n; ++i) {
    if (e[static_cast<size_t>(i)] <= 0) continue;
    if (i < first_gpu) {
      fit.cpu_expert_bytes += e[static_cast<size_t>(i)];
    } else {
      fit.gpu_expert_layers++;
      fit.gpu_bytes += e[static_cast<size_t>(i)];
    }
  }
  fit.gpu_bytes += model.gpu_fixed_bytes;
  return fit;
}

namespace {

std::string Severity(int impact) {
  if (impact >= 80) return "critical";
  if (impact >= 40) return "warning";
  return "info";
}

}  // namespace

Verdict MakeVerdict(std::string id, int impact, std::string title, std::string detail,
                    std::string fix) {
  impact = std::clamp(impact, 0, 100);
  return {std::move(id),     impact,        Severity(impact), std::move(title),
          std::move(detail), std::move(fix)};
}

namespace {

void Add(std::vector<Verdict>* out, std::string id, int impact, std::string title,
         std::string detail, std::string fix) {
  out->push_back(
      MakeVerdict(std::move(id), impact, std::move(title), std::move(detail), std::move(fix)));
}

std::string ProcessList(const GpuInfo& g) {
  std::vector<std::string> parts;
  for (const auto& p : g.processes) {
    const std::string name =
        p.name.empty() ? fmt::format("pid {}", p.pid) : fmt::format("{} (pid {})", p.name, p.pid);
    parts.push_back(p.used_bytes ? fmt::format("{} {}", name, FormatBytes(Bytes(*p.used_bytes)))
                                 : name);
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// A GPU's link narrower than the card's, and system memory an AMD GPU maps (GTT).
void GpuLinkVerdicts(const MachineProfile& p, std::vector<Verdict>* out) {
  for (const auto& g : p.gpus) {
    if (g.pcie_width_max > 0 && g.pcie_width_current > 0 &&
        g.pcie_width_current < g.pcie_width_max) {
      Add(out, fmt::format("pcie_width_gpu{}", g.index), 45,
          fmt::format("GPU {} PCIe link runs at x{} of x{}", g.index, g.pcie_width_current,
                      g.pcie_width_max),
          "prefill with CPU-side experts copies them over PCIe; a narrow link slows it "
          "proportionally",
          "move the card to a full-width slot or check the BIOS lane split");
    }
    if (g.gtt_total_bytes > 0 && g.vendor == "amd") {
      Add(out, fmt::format("gtt_gpu{}", g.index), 30,
          fmt::format("GPU {} can map {} of system memory (GTT)", g.index,
                      FormatBytes(Bytes(g.gtt_total_bytes))),
          "ROCm/Vulkan allocations beyond VRAM may land in GTT silently, the AMD analogue of "
          "unified memory",
          "keep the planned VRAM below the card's free VRAM; watch prefill speed at long context");
    }
  }
}

void GpuVerdicts(const VerdictInputs& in, std::vector<Verdict>* out) {
  const MachineProfile& p = in.profile;
  if (p.gpus.empty()) {
    const std::string bw =
        p.bandwidth ? fmt::format("{:.1f} GB/s", p.bandwidth->read_gbps) : "unmeasured";
    Add(out, "no_gpu", 25, "no GPU found: llama.cpp will run on the CPU only",
        fmt::format("every weight is read from RAM for every token; decode speed is bound by the "
                    "RAM read bandwidth ({}). {}",
                    bw, fmt::join(p.gpu_notes, "; ")),
        "nothing to place: plan and tune only the thread count and batch sizes");
    return;
  }
  const int64_t free_total = p.TotalFreeVramBytes();
  std::optional<ExpertFit> now;
  if (in.model)
    now = FitExperts(*in.model,
                     free_total - in.vram_margin_bytes * static_cast<int64_t>(p.gpus.size()));
  for (const auto& g : p.gpus) {
    // What closing the other programs would give back.
    int64_t held = 0;
    int known = 0;
    for (const auto& proc : g.processes) {
      if (proc.used_bytes) {
        held += *proc.used_bytes;
        ++known;
      }
    }
    if (known == 0) held = g.used_by_others_bytes;
    if (held < (int64_t{256} << 20)) continue;
    const int n_procs = static_cast<int>(g.processes.size());
    std::string who = n_procs > 0
                          ? fmt::format("{} program{} hold{} {} of VRAM on GPU {} ({})", n_procs,
                                        n_procs == 1 ? "" : "s", n_procs == 1 ? "s" : "",
                                        FormatBytes(Bytes(held)), g.index, ProcessList(g))
                          : fmt::format(
                                "{} of VRAM on GPU {} is held by other programs (the driver "
                                "does not list them)",
                                FormatBytes(Bytes(held)), g.index);
    int impact = held >= (int64_t{1} << 30) ? 50 : 35;
    std::string detail = fmt::format("{} free of {} on {}", FormatBytes(Bytes(g.free_bytes)),
                                     FormatBytes(Bytes(g.total_bytes)), g.name);
    if (now) {
      const ExpertFit after =
          FitExperts(*in.model, free_total + held -
                                    in.vram_margin_bytes * static_cast<int64_t>(p.gpus.size()));
      const int gained = after.gpu_expert_layers - now->gpu_expert_layers;
      if (gained > 0) {
        who += fmt::format("; closing them frees room for {} more expert layer{} ({} -> {})",
                           gained, gained == 1 ? "" : "s",
                           FlagText(FlagId::kNCpuMoe, now->n_cpu_moe), after.n_cpu_moe);
        impact = std::min(90, 55 + 5 * gained);
      } else {
        who += "; closing them would not move another expert layer to the GPU";
        impact = 30;
      }
    }
    Add(out, fmt::format("vram_held_gpu{}", g.index), impact, who, detail,
        "close those programs (browsers, chat apps, overlays, GPU-renting daemons) before running "
        "llama.cpp, then rerun `moetune doctor`");
  }
  GpuLinkVerdicts(p, out);
  if (in.model && now && !now->fixed_part_fits) {
    Add(out, "fixed_part_overflows", 95,
        fmt::format("{} at {} tokens does not fit even with every expert on the CPU",
                    in.model->name, in.model->n_ctx),
        fmt::format(
            "attention weights, KV cache and compute buffers need {}, free VRAM minus margin is {}",
            FormatBytes(Bytes(in.model->gpu_fixed_bytes)),
            FormatBytes(
                Bytes(free_total - in.vram_margin_bytes * static_cast<int64_t>(p.gpus.size())))),
        "shorten the context, quantize the KV cache (-ctk/-ctv q8_0), or offload fewer layers "
        "(-ngl)");
  }
}

void RamVerdicts(const VerdictInputs& in, std::vector<Verdict>* out) {
  const MachineProfile& p = in.profile;
  const SystemMemory& m = p.memory;
  if (in.model && m.available_bytes > 0) {
    int64_t cpu_side = in.model->host_fixed_bytes;
    std::string split;
    if (p.gpus.empty()) {
      cpu_side += std::accumulate(in.model->expert_bytes_by_layer.begin(),
                                  in.model->expert_bytes_by_layer.end(), int64_t{0}) +
                  in.model->gpu_fixed_bytes;
      split = "everything on the CPU";
    } else {
      const ExpertFit fit =
          FitExperts(*in.model, p.TotalFreeVramBytes() -
                                    in.vram_margin_bytes * static_cast<int64_t>(p.gpus.size()));
      cpu_side += fit.cpu_expert_bytes;
      split = ShellJoin(SettingsArgv({{FlagId::kNCpuMoe, std::to_string(fit.n_cpu_moe)}}));
    }
    const double ratio = static_cast<double>(cpu_side) / static_cast<double>(m.available_bytes);
    if (ratio > 1.0) {
      Add(out, "ram_short", 92,
          fmt::format("the CPU-side weights need {} but only {} of RAM is available",
                      FormatBytes(Bytes(cpu_side)), FormatBytes(Bytes(m.available_bytes))),
          fmt::format("with {}, the weights kept in host memory do not fit in RAM: the page cache "
                      "thrashes and decode drops by several times{}",
                      split, m.swap_total_bytes > 0 ? " (swap makes it worse, not better)" : ""),
          "close programs, use a smaller quantization, or add RAM");
    } else if (ratio > 0.9) {
      Add(out, "ram_tight", 55,
          fmt::format("the CPU-side weights need {} of the {} of RAM available",
                      FormatBytes(Bytes(cpu_side)), FormatBytes(Bytes(m.available_bytes))),
          fmt::format(
              "with {} less than 10% of RAM stays free; other programs can push model pages out",
              split),
          "close memory-hungry programs before long runs");
    }
  }
  if (m.cgroup_limit_bytes && m.total_bytes > 0 && *m.cgroup_limit_bytes < m.total_bytes) {
    Add(out, "cgroup_memory_limit", 40,
        fmt::format("this process's cgroup may use only {} of the machine's {} of RAM",
                    FormatBytes(Bytes(*m.cgroup_limit_bytes)), FormatBytes(Bytes(m.total_bytes))),
        "the page cache that holds mmapped model weights is charged to the limit",
        "raise the container's memory limit or plan with the smaller figure (doctor already does)");
  }
}

void CpuVerdicts(const VerdictInputs& in, std::vector<Verdict>* out) {
  const CpuTopology& c = in.profile.cpu;
  if (c.logical_cpus <= 0) return;
  const int best =
      c.suggested_threads.empty() ? c.logical_cpus : c.suggested_threads.front().threads;
  int usable = c.logical_cpus;
  if (c.cpu_quota) usable = std::min(usable, std::max(1, static_cast<int>(*c.cpu_quota)));
  if (c.llama_default_threads > usable) {
    Add(out, "llama_threads_exceed_allowed", 65,
        fmt::format("llama.cpp would start {} threads but this process may use only {} CPU{}",
                    c.llama_default_threads, usable, usable == 1 ? "" : "s"),
        fmt::format("llama.cpp counts the whole machine's cores ({}) and ignores the affinity mask "
                    "and the cgroup{}; oversubscribed threads stall at ggml's barriers",
                    c.llama_default_reason,
                    c.cpu_quota ? fmt::format(" (CPU quota {:.2f})", *c.cpu_quota) : ""),
        fmt::format("always pass -t {}", best));
  }
  if (c.hybrid) {
    std::vector<std::string> counts;
    for (const auto& s : c.suggested_threads)
      counts.push_back(fmt::format("{} ({})", s.threads, s.label));
    Add(out, "hybrid_cpu", 35,
        fmt::format("hybrid CPU: {} performance + {} efficiency cores", c.performance_cores,
                    c.efficiency_cores),
        fmt::format("llama.cpp defaults to {} threads; all physical cores can be faster for MoE "
                    "experts, or slower: only a measurement tells",
                    c.llama_default_threads),
        fmt::format("measure -t {} with repetitions (moetune tune does)", fmt::join(counts, ", ")));
  }
}

}  // namespace

std::vector<Verdict> MakeVerdicts(const VerdictInputs& in) {
  std::vector<Verdict> out;
  for (const auto& t : in.traps) Add(&out, t.id, t.impact, t.title, t.detail, t.fix);
  GpuVerdicts(in, &out);
  RamVerdicts(in, &out);
  CpuVerdicts(in, &out);
  if (in.platform) {
    const int nvidia =
        static_cast<int>(std::count_if(in.profile.gpus.begin(), in.profile.gpus.end(),
                                       [](const GpuInfo& g) { return g.vendor == "nvidia"; }));
    for (auto& v : PlatformVerdicts(*in.platform, nvidia)) out.push_back(std::move(v));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Verdict& a, const Verdict& b) { return a.impact > b.impact; });
  return out;
}

}  // namespace moetune
