#pragma once
/// Limits the process's control group puts on CPUs and memory (cgroup v2 and v1).
///
/// A container or systemd slice can allow fewer CPUs (cpuset), less CPU time
/// (a quota: "200000 100000" in cpu.max = 2 CPUs' worth) or less memory than the
/// machine has. llama.cpp ignores all three when it picks its thread count, and
/// the page cache that holds CPU-side experts is charged to the memory limit.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/sysfs.h"

namespace moetune {

struct CgroupLimits {
  int version = 0;                         // 2, 1, or 0 when no cgroup was found
  std::string path;                        // the process's cgroup, e.g. "/user.slice"
  std::optional<std::vector<int>> cpuset;  // effective CPUs, when the file was readable
  std::optional<double> cpu_quota;         // CPUs' worth of time per period; nullopt = none
  std::optional<int64_t> memory_limit;     // bytes; nullopt = unlimited/unknown
  std::optional<int64_t> memory_usage;     // bytes charged now (includes page cache)
  std::vector<std::string> notes;          // sources that were missing
};

/// Reads /proc/self/cgroup and the matching files under /sys/fs/cgroup. The
/// tightest CPU quota and memory limit on the path to the root applies.
CgroupLimits ReadCgroupLimits(const SysRoot& root);

}  // namespace moetune
