#pragma once
/// Core kinds (P/E) as hwloc reports them for the live machine. hwloc combines
/// the kernel's hybrid PMU lists, cpu_capacity, ACPI CPPC and CPUID leaf 0x1A, so
/// it can know kinds on machines where the sysfs files doctor reads are absent.
/// Its ranking is used as it is meant to be (hwloc/cpukinds.h): kinds come with
/// an efficiency (higher = more performance) when hwloc could rank them, -1 for
/// all when it could not, and then in no particular order; the index of a kind
/// says nothing by itself.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace moetune {

enum class CoreKind { kUnknown, kPerformance, kEfficiency };
const char* CoreKindName(CoreKind kind);

/// One CPU kind as hwloc_cpukinds_get_info describes it.
struct CpuKindInfo {
  std::vector<int> cpus;
  int efficiency = -1;       // hwloc's ranking, 0 = most power-efficient; -1 unknown
  std::string core_type;     // info "CoreType": "IntelCore", "IntelAtom", ...
  int64_t max_freq_mhz = 0;  // info "FrequencyMaxMHz"
  int64_t capacity = 0;      // info "LinuxCapacity"
};

/// Which CPUs are performance and which efficiency cores: by hwloc's efficiency
/// when it is known (the most efficient-ranked kinds, i.e. the highest value,
/// are the performance cores; the others efficiency cores), else by core type
/// (IntelCore / IntelAtom), else by maximum frequency, else by capacity.
/// nullopt when there are fewer than two kinds or nothing tells them apart;
/// `*how` names what decided ("hwloc efficiency", ...).
std::optional<std::map<int, CoreKind>> RankCpuKinds(const std::vector<CpuKindInfo>& kinds,
                                                    std::string* how);

/// hwloc's kinds on the live machine (empty when hwloc has none or fails).
std::vector<CpuKindInfo> HwlocCpuKinds();

}  // namespace moetune
