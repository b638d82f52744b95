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

/// The bars of one placement: the GPU (full length = free VRAM) and the host
/// (full length = available RAM, when known).
std::vector<BarRow> PlacementMemoryRows(const PlacementOption& option, const PlanRequest& request);

/// A stacked-bar figure with its data table and legend.
Figure MemoryMapFigure(const std::vector<BarRow>& rows, const std::string& id,
                       const std::string& caption);

/// GPU memory needed against N (or -ngl for dense models), with the usable
/// budget as a line: the boundary between fitting and overflowing. nullopt for
/// a plan without options.
std::optional<Figure> PlanOptionsFigure(const Plan& plan, const PlanRequest& request,
                                        const std::string& id = "gpu-per-n");

}  // namespace moetune
