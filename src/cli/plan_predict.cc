#include "cli/plan_predict.h"

#include <iostream>

#include "util/utf8.h"

namespace moetune {

Result<PlanPrediction> PredictForPlan(const ModelInfo& model, const Plan& plan,
                                      const PlanRequest& request, const MachineFlags& flags,
                                      int threads) {
  MOETUNE_ASSIGN_OR_RETURN(ResolvedMachine m, ResolveMachine(flags));
  MachineSpec spec = m.spec;
  if (spec.accel()) {
    // The plan's budget is the one the options were sized for.
    spec.accel()->vram_free = request.vram_free;
    spec.accel()->vram_total = std::max(spec.accel()->vram_total, request.vram_free);
    spec.reserve = request.reserve;
  }
  for (const auto& n : spec.notes) std::cerr << ForTerminal("moetune: note: " + n + "\n");
  PlanPredictionOptions o;
  o.threads = threads;
  o.uncertainty = m.uncertainty;
  return PredictPlan(model, plan, request, spec, m.constants, o);
}

}  // namespace moetune
