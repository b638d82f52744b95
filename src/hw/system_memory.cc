#include "hw/system_memory.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "hw/cgroup.h"

namespace moetune {

SystemMemory ReadSystemMemory(const SysRoot& root) {
  SystemMemory m;
  auto text = root.Read("/proc/meminfo");
  if (!text) {
    m.notes.push_back("/proc/meminfo not readable: RAM size unknown");
  } else {
    std::map<std::string, int64_t> kv;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      // "MemTotal:       24684084 kB"
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::istringstream rest(line.substr(colon + 1));
      int64_t value = 0;
      std::string unit;
      if (!(rest >> value)) continue;
      rest >> unit;
      kv[line.substr(0, colon)] = unit == "kB" ? value * 1024 : value;
    }
    auto get = [&](const char* key) -> int64_t {
      auto it = kv.find(key);
      if (it == kv.end()) {
        m.notes.push_back(std::string("/proc/meminfo has no ") + key);
        return 0;
      }
      return it->second;
    };
    m.total_bytes = get("MemTotal");
    m.meminfo_available_bytes = kv.count("MemAvailable") ? kv["MemAvailable"] : get("MemFree");
    m.cached_bytes = kv.count("Cached") ? kv["Cached"] : 0;
    m.swap_total_bytes = kv.count("SwapTotal") ? kv["SwapTotal"] : 0;
    m.swap_free_bytes = kv.count("SwapFree") ? kv["SwapFree"] : 0;
  }
  m.available_bytes = m.meminfo_available_bytes;
  const CgroupLimits cg = ReadCgroupLimits(root);
  m.cgroup_limit_bytes = cg.memory_limit;
  m.cgroup_usage_bytes = cg.memory_usage;
  if (cg.memory_limit) {
    // Page cache counts against the limit but is reclaimable, so the headroom is
    // at least limit - usage; do not subtract cache twice, just cap.
    const int64_t headroom = *cg.memory_limit - cg.memory_usage.value_or(0);
    if (m.available_bytes == 0 || headroom < m.available_bytes) {
      m.available_bytes = std::max<int64_t>(0, headroom);
    }
    if (m.total_bytes == 0 || *cg.memory_limit < m.total_bytes) {
      m.notes.push_back(
          "the cgroup memory limit is below the machine's RAM; available RAM is capped to it");
    }
  }
  return m;
}

}  // namespace moetune
