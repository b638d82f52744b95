#pragma once
/// CPU topology as llama.cpp's thread pool experiences it: packages, physical
/// cores, SMT siblings, core kinds on hybrid CPUs (P/E), and which CPUs this
/// process may actually use (affinity mask, cgroup cpuset, cgroup CPU quota).
///
/// Sources, all read under a SysRoot so that fixture trees stand in for
/// machines in tests:
///   /sys/devices/system/cpu/{online,possible}
///   /sys/devices/system/cpu/cpuN/topology/{physical_package_id,die_id,core_id,
///       cluster_id,thread_siblings_list}
///   /sys/devices/system/cpu/cpuN/cpu_capacity         (ARM big.LITTLE)
///   /sys/devices/system/cpu/cpuN/topology/core_type   (intel_core/intel_atom, newer kernels)
///   /sys/devices/system/cpu/cpuN/cache/indexK/{level,size,shared_cpu_list}
///   /sys/devices/cpu_core/cpus, /sys/devices/cpu_atom/cpus (Intel hybrid PMUs)
///   /proc/cpuinfo (model name), /proc/self/status (Cpus_allowed_list)
///   cgroup files (see cgroup.h)
/// Core kinds come first from hwloc's ranked cpukinds on the live system
/// (hwloc_kinds.h), else from the sysfs hints: per-CPU core_type, the Intel
/// hybrid PMU lists, cpu_capacity.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/cgroup.h"
#include "hw/hwloc_kinds.h"
#include "hw/sysfs.h"

namespace moetune {

struct CpuCore {
  int package = 0;
  int die = 0;
  int core_id = 0;
  std::vector<int> cpus;  // logical CPUs (SMT siblings) of this core, online only
  CoreKind kind = CoreKind::kUnknown;
};

/// One thread count worth measuring, with the reason it is a candidate.
struct ThreadSuggestion {
  int threads = 0;
  std::string label;  // "physical_cores", "performance_cores", "logical_cpus", "cpu_quota"
  std::string reason;
};

struct CpuTopology {
  std::string model_name;
  std::string vendor;
  // Whole machine (online CPUs), as llama.cpp sees it.
  int sockets = 0;
  int physical_cores = 0;
  int online_cpus = 0;
  int possible_cpus = 0;
  int max_smt = 1;  // threads per core, max over cores
  bool hybrid = false;
  int performance_cores = 0;  // hybrid only
  int efficiency_cores = 0;   // hybrid only
  std::string
      kind_source;        // where P/E came from: "sysfs cpu_core/cpu_atom", "cpu_capacity", "hwloc"
  int l3_domains = 0;     // groups of cores sharing a last-level cache (e.g. AMD CCDs)
  int64_t llc_bytes = 0;  // size of one last-level cache
  std::vector<CpuCore> cores;

  // What this process may use.
  std::vector<int> allowed_cpus;  // affinity ∩ cgroup cpuset ∩ online
  int logical_cpus = 0;           // allowed_cpus.size()
  int allowed_physical_cores = 0;
  int allowed_performance_cores = 0;
  std::optional<double> cpu_quota;  // cgroup CPU quota in CPUs

  /// llama.cpp's default -t (common_cpu_get_num_math, common/common.cpp).
  int llama_default_threads = 0;
  std::string llama_default_reason;
  std::vector<ThreadSuggestion> suggested_threads;
  std::vector<std::string> notes;  // missing or odd sources
};

/// Reads everything under `root`. Never fails: what cannot be read is named in notes.
/// `use_hwloc` lets the live system ask hwloc for core kinds first.
CpuTopology ReadCpuTopology(const SysRoot& root, bool use_hwloc = true);

/// One line that tells machines apart for a journal or a tune file:
/// "<model name> (<logical> logical CPUs, <physical> physical cores)".
std::string CpuFingerprint(const CpuTopology& cpu);

/// As ReadCpuTopology, with `hwloc_kinds` standing in for what hwloc reports
/// (tests pair fixture trees with kinds hwloc could report on them).
CpuTopology ReadCpuTopologyWithKinds(const SysRoot& root,
                                     const std::vector<CpuKindInfo>& hwloc_kinds);

/// The thread count llama.cpp picks by default on this topology, mirroring
/// common_cpu_get_num_math() and common_cpu_get_num_physical_cores()
/// (ggml-org/llama.cpp common/common.cpp). Exposed for tests.
int LlamaDefaultThreads(const SysRoot& root, const CpuTopology& topo, std::string* reason);

/// The thread counts worth measuring on this topology, each with its reason.
std::vector<ThreadSuggestion> SuggestThreads(const CpuTopology& topo);

}  // namespace moetune
