#include "hw/hwloc_kinds.h"

#include <hwloc.h>

namespace moetune {

std::optional<std::map<int, CoreKind>> HwlocCoreKinds() {
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0) return std::nullopt;
  std::optional<std::map<int, CoreKind>> result;
  if (hwloc_topology_load(topo) == 0) {
    const int nr = hwloc_cpukinds_get_nr(topo, 0);
    if (nr > 1) {
      // hwloc orders kinds by efficiency rank, lowest (most power-efficient) first;
      // the last kind is the performance kind.
      std::map<int, CoreKind> kinds;
      hwloc_bitmap_t set = hwloc_bitmap_alloc();
      for (int k = 0; k < nr && set != nullptr; ++k) {
        int efficiency = -1;
        if (hwloc_cpukinds_get_info(topo, static_cast<unsigned>(k), set, &efficiency, nullptr,
                                    nullptr, 0) != 0) {
          continue;
        }
        const CoreKind kind = k == nr - 1 ? CoreKind::kPerformance : CoreKind::kEfficiency;
        int cpu = -1;
        while ((cpu = hwloc_bitmap_next(set, cpu)) != -1) kinds[cpu] = kind;
      }
      if (set != nullptr) hwloc_bitmap_free(set);
      if (!kinds.empty()) result = std::move(kinds);
    }
  }
  hwloc_topology_destroy(topo);
  return result;
}

}  // namespace moetune
