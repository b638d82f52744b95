#pragma once
/// Core kinds (P/E) as hwloc reports them for the live machine. hwloc combines
/// the kernel's hybrid PMU lists, cpu_capacity, ACPI CPPC and CPUID leaf 0x1A, so
/// it can know kinds on machines where the sysfs files doctor reads are absent.

#include <map>
#include <optional>

#include "hw/cpu_topology.h"

namespace moetune {

/// cpu number -> kind, or nullopt when hwloc sees a single kind (or fails).
std::optional<std::map<int, CoreKind>> HwlocCoreKinds();

}  // namespace moetune
