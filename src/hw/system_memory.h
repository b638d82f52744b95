#pragma once
/// System RAM as the page cache that holds CPU-side experts sees it:
/// /proc/meminfo plus the cgroup memory limit (page cache is charged to it).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hw/sysfs.h"

namespace moetune {

struct SystemMemory {
  int64_t total_bytes = 0;      // MemTotal
  int64_t available_bytes = 0;  // MemAvailable, lowered to the cgroup's headroom when tighter
  int64_t meminfo_available_bytes = 0;
  int64_t cached_bytes = 0;  // Cached (page cache, includes mmapped model files)
  int64_t swap_total_bytes = 0;
  int64_t swap_free_bytes = 0;
  std::optional<int64_t> cgroup_limit_bytes;
  std::optional<int64_t> cgroup_usage_bytes;
  std::vector<std::string> notes;
};

/// Reads /proc/meminfo and the cgroup memory files under `root`. Never fails.
SystemMemory ReadSystemMemory(const SysRoot& root);

}  // namespace moetune
