#pragma once
/// Memory figures of a placement: the memory map of the pick as one stacked bar
/// per device (weights by role, KV cache, recurrent state, compute buffers, the
/// safety margin, what other programs hold, the headroom left), and the GPU
/// memory every N needs against the budget (where the boundary is).

#include <optional>
#include <string>
#include <vector>

#include "plan/placement.h"
#include "report/document.h"
#include "report/svg_bars.h"

namespace moetune {

/// What the bars are measured against; any figure may be 0 (unknown).
struct MemoryBudget {
  int64_t vram_free = 0;           // the GPU bar's length
  int64_t reserve = 0;             // held by other programs (part of vram_free)
  int64_t margin = 0;              // kept free on purpose
  int64_t host_ram_available = 0;  // the host bar's length
};
MemoryBudget BudgetOf(const PlanRequest& request);

/// The bars of one placement: the GPU (full length = free VRAM) and the host
/// (full length = available RAM, when known).
std::vector<BarRow> PlacementMemoryRows(const PlacementOption& option, const MemoryBudget& budget);

/// A stacked-bar figure with its data table and legend.
Figure MemoryMapFigure(const std::vector<BarRow>& rows, const std::string& id,
                       const std::string& caption);

/// GPU memory needed against N (or -ngl for dense models), with the usable
/// budget as a line: the boundary between fitting and overflowing. nullopt for
/// a plan without options.
std::optional<Figure> PlanOptionsFigure(const Plan& plan, const PlanRequest& request,
                                        const std::string& id = "gpu-per-n");

}  // namespace moetune
