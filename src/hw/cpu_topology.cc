#include "hw/cpu_topology.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "util/text.h"

namespace moetune {

namespace {

constexpr const char* kCpuDir = "/sys/devices/system/cpu";

std::string CpuPath(int cpu, const char* leaf) {
  return fmt::format("{}/cpu{}/{}", kCpuDir, cpu, leaf);
}

bool Contains(const std::vector<int>& sorted, int v) {
  return std::binary_search(sorted.begin(), sorted.end(), v);
}

// CPUs listed as cpuN folders, for kernels/fixtures without the "online" file.
std::vector<int> ListCpuDirs(const SysRoot& root) {
  std::vector<int> out;
  for (const auto& name : root.List(kCpuDir)) {
    if (name.size() > 3 && name.compare(0, 3, "cpu") == 0 &&
        name.find_first_not_of("0123456789", 3) == std::string::npos) {
      // A number too large for a CPU (a crafted tree) is skipped, not thrown.
      if (auto n = ParseIntInRange(name.substr(3), 0, 1 << 16)) out.push_back(static_cast<int>(*n));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "491520K" -> bytes.
std::optional<int64_t> ParseCacheSize(const std::string& s) {
  if (s.empty()) return std::nullopt;
  int64_t mult = 1;
  std::string digits = s;
  const char last = s.back();
  if (last == 'K')
    mult = 1024;
  else if (last == 'M')
    mult = int64_t{1024} * 1024;
  else if (last == 'G')
    mult = int64_t{1} << 30;
  if (mult != 1) digits.pop_back();
  const auto v = ParseIntInRange(digits, 0, INT64_MAX / mult);
  if (!v) return std::nullopt;
  return *v * mult;
}

void ReadCpuInfo(const SysRoot& root, CpuTopology* t) {
  auto text = root.Read("/proc/cpuinfo");
  if (!text) {
    t->notes.push_back("/proc/cpuinfo not readable: CPU model unknown");
    return;
  }
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key(Trim(std::string_view(line).substr(0, colon)));
    const std::string value(Trim(std::string_view(line).substr(colon + 1)));
    if (t->model_name.empty() && (key == "model name" || key == "Model")) t->model_name = value;
    if (t->vendor.empty() && (key == "vendor_id" || key == "CPU implementer")) t->vendor = value;
  }
}

void ReadCaches(const SysRoot& root, CpuTopology* t) {
  int best_level = 0;
  std::set<std::string> domains;
  for (const auto& core : t->cores) {
    for (int cpu : core.cpus) {
      const std::string base = fmt::format("{}/cpu{}/cache", kCpuDir, cpu);
      for (const auto& index : root.List(base)) {
        if (index.compare(0, 5, "index") != 0) continue;
        std::string dir = base;
        dir += "/";
        dir += index;
        const auto level = root.ReadInt(dir + "/level");
        const auto type = root.ReadLine(dir + "/type");
        if (!level || (type && *type == "Instruction")) continue;
        const auto size = ParseCacheSize(root.ReadLine(dir + "/size").value_or(""));
        const auto shared = root.ReadLine(dir + "/shared_cpu_list").value_or("");
        if (*level > best_level) {
          best_level = static_cast<int>(*level);
          domains.clear();
          t->llc_bytes = 0;
        }
        if (*level == best_level) {
          domains.insert(shared);
          if (size) t->llc_bytes = std::max(t->llc_bytes, *size);
        }
      }
    }
  }
  t->l3_domains = static_cast<int>(domains.size());
  if (best_level == 0)
    t->notes.push_back("cache sizes not readable under /sys/devices/system/cpu/cpu*/cache");
}

// Applies `kinds` (cpu -> kind) to the cores by each core's first CPU; false
// when some core is left without a kind (the source does not cover them all).
bool ApplyKinds(const std::map<int, CoreKind>& kinds, CpuTopology* t) {
  for (const auto& core : t->cores) {
    if (!kinds.count(core.cpus.front())) return false;
  }
  for (auto& core : t->cores) core.kind = kinds.at(core.cpus.front());
  return true;
}

// Assigns P/E kinds; returns the source used, or "" when the CPU is not hybrid
// (or nothing tells its kinds apart).
std::string AssignKinds(const SysRoot& root, const std::vector<CpuKindInfo>& hwloc_kinds,
                        CpuTopology* t) {
  // hwloc first: it combines every source the kernel and the CPU offer, and
  // ranks the kinds (RankCpuKinds).
  std::string how;
  if (auto kinds = RankCpuKinds(hwloc_kinds, &how); kinds && ApplyKinds(*kinds, t)) return how;
  // Newer kernels name each CPU's core type.
  std::map<int, CoreKind> by_type;
  for (const auto& core : t->cores) {
    const auto type = root.ReadLine(CpuPath(core.cpus.front(), "topology/core_type"));
    if (!type) break;
    const std::string lower = AsciiLower(*type);
    if (lower.find("atom") != std::string::npos) {
      by_type[core.cpus.front()] = CoreKind::kEfficiency;
    } else if (lower.find("core") != std::string::npos) {
      by_type[core.cpus.front()] = CoreKind::kPerformance;
    }
  }
  const bool both_types =
      std::any_of(by_type.begin(), by_type.end(),
                  [](const auto& e) { return e.second == CoreKind::kEfficiency; }) &&
      std::any_of(by_type.begin(), by_type.end(),
                  [](const auto& e) { return e.second == CoreKind::kPerformance; });
  if (both_types && ApplyKinds(by_type, t)) return "sysfs core_type";
  // Intel hybrid CPUs expose one PMU per core type.
  const auto p_list = root.ReadLine("/sys/devices/cpu_core/cpus");
  const auto e_list = root.ReadLine("/sys/devices/cpu_atom/cpus");
  if (p_list && e_list) {
    const auto p = ParseCpuList(*p_list).value_or(std::vector<int>{});
    const auto e = ParseCpuList(*e_list).value_or(std::vector<int>{});
    if (!p.empty() && !e.empty()) {
      for (auto& core : t->cores) {
        core.kind = Contains(e, core.cpus.front()) ? CoreKind::kEfficiency : CoreKind::kPerformance;
      }
      return "sysfs cpu_core/cpu_atom";
    }
  }
  // ARM (and some others): relative capacity 0..1024 per CPU.
  std::map<int, int64_t> capacity;
  for (const auto& core : t->cores) {
    if (auto c = root.ReadInt(CpuPath(core.cpus.front(), "cpu_capacity")))
      capacity[core.cpus.front()] = *c;
  }
  if (capacity.size() == t->cores.size() && !capacity.empty()) {
    int64_t hi = 0;
    int64_t lo = INT64_MAX;
    for (const auto& [cpu, c] : capacity) {
      hi = std::max(hi, c);
      lo = std::min(lo, c);
    }
    if (hi != lo) {
      for (auto& core : t->cores) {
        core.kind =
            capacity[core.cpus.front()] == hi ? CoreKind::kPerformance : CoreKind::kEfficiency;
      }
      return "cpu_capacity";
    }
  }
  for (auto& core : t->cores) core.kind = CoreKind::kUnknown;
  return "";
}

std::vector<int> ReadAllowed(const SysRoot& root, const CgroupLimits& cg, CpuTopology* t) {
  std::optional<std::vector<int>> affinity;
  if (auto status = root.Read("/proc/self/status")) {
    std::istringstream in(*status);
    std::string line;
    while (std::getline(in, line)) {
      if (line.compare(0, 18, "Cpus_allowed_list:") == 0) affinity = ParseCpuList(line.substr(18));
    }
  }
  if (!affinity && root.is_live()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
      }
      affinity = cpus;
    }
  }
  std::vector<int> online;
  for (const auto& core : t->cores) online.insert(online.end(), core.cpus.begin(), core.cpus.end());
  std::sort(online.begin(), online.end());
  std::vector<int> allowed = online;
  if (affinity) {
    allowed = IntersectCpus(allowed, *affinity);
  } else {
    t->notes.push_back(
        "Cpus_allowed_list not readable in /proc/self/status: assuming all online CPUs");
  }
  if (cg.cpuset) allowed = IntersectCpus(allowed, *cg.cpuset);
  return allowed;
}

}  // namespace

CpuTopology ReadCpuTopology(const SysRoot& root, bool use_hwloc) {
  return ReadCpuTopologyWithKinds(
      root, use_hwloc && root.is_live() ? HwlocCpuKinds() : std::vector<CpuKindInfo>{});
}

CpuTopology ReadCpuTopologyWithKinds(const SysRoot& root,
                                     const std::vector<CpuKindInfo>& hwloc_kinds) {
  CpuTopology t;
  ReadCpuInfo(root, &t);

  std::vector<int> online;
  if (auto line = root.ReadLine(std::string(kCpuDir) + "/online")) {
    online = ParseCpuList(*line).value_or(std::vector<int>{});
  }
  if (online.empty()) {
    online = ListCpuDirs(root);
    t.notes.push_back("/sys/devices/system/cpu/online not readable: using the cpuN folders");
  }
  if (auto line = root.ReadLine(std::string(kCpuDir) + "/possible")) {
    t.possible_cpus = static_cast<int>(ParseCpuList(*line).value_or(std::vector<int>{}).size());
  }
  t.online_cpus = static_cast<int>(online.size());

  // Group online CPUs into cores by their SMT sibling list, which is unique per
  // core even where core_id repeats across dies or clusters.
  std::map<std::vector<int>, CpuCore> by_siblings;
  std::set<int> packages;
  bool missing_topology = false;
  for (int cpu : online) {
    CpuCore core;
    core.package =
        static_cast<int>(root.ReadInt(CpuPath(cpu, "topology/physical_package_id")).value_or(0));
    core.die = static_cast<int>(root.ReadInt(CpuPath(cpu, "topology/die_id")).value_or(0));
    const auto core_id = root.ReadInt(CpuPath(cpu, "topology/core_id"));
    core.core_id = static_cast<int>(core_id.value_or(cpu));
    std::vector<int> siblings;
    if (auto s = root.ReadLine(CpuPath(cpu, "topology/thread_siblings_list"))) {
      siblings = IntersectCpus(ParseCpuList(*s).value_or(std::vector<int>{}), online);
    }
    if (siblings.empty() || !Contains(siblings, cpu)) {
      missing_topology = missing_topology || !core_id;
      siblings = {cpu};
    }
    packages.insert(core.package);
    auto [it, inserted] = by_siblings.emplace(siblings, core);
    it->second.cpus.push_back(cpu);
  }
  if (missing_topology) {
    t.notes.push_back(
        "topology files missing under /sys/devices/system/cpu/cpu*/topology: "
        "each CPU counted as its own core");
  }
  for (auto& [siblings, core] : by_siblings) t.cores.push_back(core);
  std::sort(t.cores.begin(), t.cores.end(),
            [](const CpuCore& a, const CpuCore& b) { return a.cpus.front() < b.cpus.front(); });
  t.sockets = static_cast<int>(packages.size());
  t.physical_cores = static_cast<int>(t.cores.size());
  for (const auto& core : t.cores)
    t.max_smt = std::max(t.max_smt, static_cast<int>(core.cpus.size()));

  t.kind_source = AssignKinds(root, hwloc_kinds, &t);
  t.hybrid = !t.kind_source.empty();
  if (t.hybrid) {
    for (const auto& core : t.cores) {
      (core.kind == CoreKind::kPerformance ? t.performance_cores : t.efficiency_cores)++;
    }
  }
  ReadCaches(root, &t);

  const CgroupLimits cg = ReadCgroupLimits(root);
  t.notes.insert(t.notes.end(), cg.notes.begin(), cg.notes.end());
  t.cpu_quota = cg.cpu_quota;
  t.allowed_cpus = ReadAllowed(root, cg, &t);
  t.logical_cpus = static_cast<int>(t.allowed_cpus.size());
  for (const auto& core : t.cores) {
    const bool any = std::any_of(core.cpus.begin(), core.cpus.end(),
                                 [&](int c) { return Contains(t.allowed_cpus, c); });
    if (!any) continue;
    t.allowed_physical_cores++;
    if (core.kind == CoreKind::kPerformance) t.allowed_performance_cores++;
  }
  t.llama_default_threads = LlamaDefaultThreads(root, t, &t.llama_default_reason);
  t.suggested_threads = SuggestThreads(t);
  return t;
}

int LlamaDefaultThreads(const SysRoot& root, const CpuTopology& topo, std::string* reason) {
  // common_cpu_get_num_physical_cores(): distinct thread_siblings strings of
  // cpu0, cpu1, ... up to the first CPU whose file is missing. It looks at the
  // whole machine, not at the affinity mask or the cgroup.
  std::set<std::string> siblings;
  for (int cpu = 0;; ++cpu) {
    auto s = root.ReadLine(CpuPath(cpu, "topology/thread_siblings"));
    if (!s) s = root.ReadLine(CpuPath(cpu, "topology/thread_siblings_list"));
    if (!s) break;
    siblings.insert(*s);
  }
  int physical = static_cast<int>(siblings.size());
  std::string physical_reason =
      "distinct thread_siblings in sysfs (physical cores of the whole machine)";
  if (physical == 0) {
    // std::thread::hardware_concurrency() is the online CPU count on glibc.
    const int n = topo.online_cpus;
    physical = n <= 4 ? n : n / 2;
    physical_reason = "no sysfs topology: hardware_concurrency() <= 4 ? n : n/2";
  }
  // common_cpu_get_num_math(): on x86 CPUs with the CPUID hybrid flag it pins
  // itself to CPUs 0..n_online-1 in turn, skips E-cores, and after counting a
  // P-core also skips the next CPU number, assuming it is that core's SMT sibling.
  const bool x86 = topo.vendor == "GenuineIntel" || topo.vendor == "AuthenticAMD";
  if (topo.hybrid && x86) {
    std::set<int> efficiency;
    for (const auto& core : topo.cores) {
      if (core.kind == CoreKind::kEfficiency) efficiency.insert(core.cpus.begin(), core.cpus.end());
    }
    int result = 0;
    bool pin_failed = false;
    for (int cpu = 0; cpu < topo.online_cpus; ++cpu) {
      if (!Contains(topo.allowed_cpus, cpu)) {
        pin_failed = true;  // pthread_setaffinity_np fails outside the allowed set
        break;
      }
      if (efficiency.count(cpu)) continue;
      ++cpu;
      ++result;
    }
    if (!pin_failed && result > 0) {
      *reason =
          "hybrid CPU: P-cores counted by pinning to each CPU (common_cpu_get_num_math, "
          "llama.cpp common/common.cpp)";
      return result;
    }
    physical_reason +=
        pin_failed ? " (hybrid P-core count failed: a CPU is outside the affinity mask)" : "";
  }
  *reason = physical_reason + " (common_cpu_get_num_physical_cores, llama.cpp common/common.cpp)";
  return physical;
}

std::vector<ThreadSuggestion> SuggestThreads(const CpuTopology& topo) {
  std::vector<ThreadSuggestion> raw;
  raw.push_back({topo.allowed_physical_cores, "physical_cores",
                 "one thread per physical core: MoE expert matmuls are memory-bound and SMT "
                 "siblings share one core's load units"});
  if (topo.hybrid && topo.allowed_performance_cores > 0 &&
      topo.allowed_performance_cores < topo.allowed_physical_cores) {
    raw.push_back({topo.allowed_performance_cores, "performance_cores",
                   "P-cores only: ggml's threads meet at a barrier after every operation, so "
                   "slower E-cores can set the pace (llama.cpp's own default on hybrid CPUs)"});
  }
  if (topo.logical_cpus > topo.allowed_physical_cores) {
    raw.push_back({topo.logical_cpus, "logical_cpus",
                   "all logical CPUs: SMT may help prefill but often hurts decode and adds "
                   "variance; only a measurement tells"});
  }
  std::optional<int> cap;
  if (topo.cpu_quota) cap = std::max(1, static_cast<int>(std::floor(*topo.cpu_quota + 1e-9)));
  std::vector<ThreadSuggestion> out;
  for (auto s : raw) {
    if (s.threads <= 0) continue;
    if (cap && s.threads > *cap) {
      s.threads = *cap;
      s.label = "cpu_quota";
      s.reason = fmt::format(
          "the cgroup CPU quota allows {:.2f} CPUs' worth of time; more "
          "threads than that are throttled and stall ggml's barriers",
          *topo.cpu_quota);
    }
    const bool dup = std::any_of(out.begin(), out.end(),
                                 [&](const ThreadSuggestion& o) { return o.threads == s.threads; });
    if (!dup) out.push_back(s);
  }
  return out;
}

std::string CpuFingerprint(const CpuTopology& cpu) {
  return fmt::format("{} ({} logical CPUs, {} physical cores)", cpu.model_name, cpu.logical_cpus,
                     cpu.allowed_physical_cores);
}

}  // namespace moetune
