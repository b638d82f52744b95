#include "hw/hwloc_kinds.h"

#include <hwloc.h>

#include <algorithm>
#include <functional>
#include <string_view>

#include "util/text.h"

namespace moetune {
namespace {

// Performance = the kinds whose `key` is the largest; nullopt when every kind
// has the same key or any kind lacks one (key <= 0 or < 0 for efficiency).
std::optional<std::map<int, CoreKind>> ByLargest(
    const std::vector<CpuKindInfo>& kinds, const std::function<int64_t(const CpuKindInfo&)>& key,
    int64_t missing_at_or_below) {
  int64_t hi = INT64_MIN;
  int64_t lo = INT64_MAX;
  for (const auto& k : kinds) {
    const int64_t v = key(k);
    if (v <= missing_at_or_below) return std::nullopt;
    hi = std::max(hi, v);
    lo = std::min(lo, v);
  }
  if (hi == lo) return std::nullopt;
  std::map<int, CoreKind> out;
  for (const auto& k : kinds) {
    const CoreKind kind = key(k) == hi ? CoreKind::kPerformance : CoreKind::kEfficiency;
    for (int cpu : k.cpus) out[cpu] = kind;
  }
  return out;
}

}  // namespace

const char* CoreKindName(CoreKind kind) {
  switch (kind) {
    case CoreKind::kPerformance:
      return "performance";
    case CoreKind::kEfficiency:
      return "efficiency";
    case CoreKind::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<std::map<int, CoreKind>> RankCpuKinds(const std::vector<CpuKindInfo>& kinds,
                                                    std::string* how) {
  if (kinds.size() < 2) return std::nullopt;
  if (auto r = ByLargest(
          kinds, [](const CpuKindInfo& k) { return int64_t{k.efficiency}; }, -1)) {
    *how = "hwloc efficiency";
    return r;
  }
  // Unranked: Intel's core types say it directly.
  auto type_rank = [](const CpuKindInfo& k) -> int64_t {
    if (k.core_type == "IntelCore") return 2;
    if (k.core_type == "IntelAtom") return 1;
    return 0;
  };
  if (auto r = ByLargest(kinds, type_rank, 0)) {
    *how = "hwloc core type";
    return r;
  }
  if (auto r = ByLargest(
          kinds, [](const CpuKindInfo& k) { return k.max_freq_mhz; }, 0)) {
    *how = "hwloc maximum frequency";
    return r;
  }
  if (auto r = ByLargest(
          kinds, [](const CpuKindInfo& k) { return k.capacity; }, 0)) {
    *how = "hwloc capacity";
    return r;
  }
  return std::nullopt;
}

std::vector<CpuKindInfo> HwlocCpuKinds() {
  std::vector<CpuKindInfo> out;
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) return out;
  if (hwloc_topology_load(topo) == 0) {
    const int nr = hwloc_cpukinds_get_nr(topo, 0);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int k = 0; k < nr && set != nullptr; ++k) {
      CpuKindInfo info;
      unsigned nr_infos = 0;
      hwloc_info_s* infos = nullptr;
      if (hwloc_cpukinds_get_info(topo, static_cast<unsigned>(k), set, &info.efficiency, &nr_infos,
                                  &infos, 0) != 0) {
        continue;
      }
      for (unsigned i = 0; i < nr_infos && infos != nullptr; ++i) {
        const std::string_view name = infos[i].name != nullptr ? infos[i].name : "";
        const std::string_view value = infos[i].value != nullptr ? infos[i].value : "";
        if (name == "CoreType") info.core_type = std::string(value);
        if (name == "FrequencyMaxMHz") info.max_freq_mhz = ParseInt64(value).value_or(0);
        if (name == "LinuxCapacity") info.capacity = ParseInt64(value).value_or(0);
      }
      int cpu = -1;
      while ((cpu = hwloc_bitmap_next(set, cpu)) != -1) info.cpus.push_back(cpu);
      out.push_back(std::move(info));
    }
    if (set != nullptr) hwloc_bitmap_free(set);
  }
  hwloc_topology_destroy(topo);
  return out;
}

}  // namespace moetune
