#include "speed/plan_prediction.h"

#include <fmt/format.h>

#include <algorithm>

namespace moetune {

std::optional<int> FirstLoadingNCpuMoe(const SpeedModel& model, RunSettings proto) {
  MachineSpec strict = model.machine();
  strict.spill = SpillMode::kStrict;
  const SpeedModel sm(model.model(), strict, model.constants());
  const int n_layer = static_cast<int>(sm.shape().layers.size());
  for (int n = 0; n <= n_layer; ++n) {
    proto.n_cpu_moe = n;
    auto p = sm.Predict(proto);
    if (p.ok() && p->loads) return n;
  }
  return std::nullopt;
}

Result<PlanPrediction> PredictPlan(const ModelInfo& model, const Plan& plan, const PlanRequest& req,
                                   const MachineSpec& machine,
                                   const CalibrationConstants& constants,
                                   const PlanPredictionOptions& o) {
  PlanPrediction out;
  out.machine = machine.label;
  out.placement_matters = machine.has_gpu();
  out.threads = o.threads > 0 ? o.threads : std::max(1, machine.cpu.p_cores);
  out.target_depth = static_cast<int>(
      std::max<int64_t>(0, req.ctx.n_ctx - std::max(o.n_prompt, o.workload_prompt) - o.n_gen));
  if (!out.placement_matters) {
    out.notes.push_back(
        "no GPU on this machine: every layer runs on the CPU, so the placement does not change "
        "speed (pass --machine GPU_PRESET to predict a GPU)");
  }
  SpeedModel sm(model, machine, constants);
  sm.set_uncertainty(o.uncertainty);
  out.uncertainty = o.uncertainty;
  out.calibrated = o.uncertainty.calibrated;
  for (const auto& opt : plan.options) {
    OptionPrediction p;
    p.n_cpu_moe = opt.n_cpu_moe;
    p.ngl = opt.ngl;
    p.fits = opt.fits;
    RunSettings r;
    r.n_gpu_layers = opt.ngl;
    r.n_cpu_moe = opt.n_cpu_moe;
    r.threads = out.threads;
    r.n_ubatch = static_cast<int>(req.ctx.n_ubatch);
    r.n_batch = static_cast<int>(req.ctx.n_batch);
    r.type_k = req.ctx.type_k;
    r.type_v = req.ctx.type_v;
    r.flash_attn = req.ctx.flash_attn;
    r.n_ctx = req.ctx.n_ctx;  // the server allocates the whole context up front
    r.n_seq = req.ctx.n_seq;
    r.kv_unified = req.ctx.kv_unified;
    r.n_prompt = o.n_prompt;
    r.n_gen = o.n_gen;
    r.n_depth = 0;
    MOETUNE_ASSIGN_OR_RETURN(p.depth0, sm.Predict(r));
    r.n_depth = out.target_depth;
    MOETUNE_ASSIGN_OR_RETURN(p.target, sm.Predict(r));
    // The workload at the target depth.
    if (p.target.loads && p.target.prefill.tokens_per_second > 0 &&
        p.target.decode.tokens_per_second > 0) {
      p.workload_seconds = o.workload_prompt / p.target.prefill.tokens_per_second +
                           o.workload_answer / p.target.decode.tokens_per_second;
    }
    out.options.push_back(std::move(p));
  }
  // The fastest safe option; ties go to more layers on the CPU (the plan's
  // options are ordered from fewest to most CPU layers for MoE models).
  double fastest = 0;
  for (const auto& p : out.options) {
    if (p.fits && p.workload_seconds > 0 && (fastest == 0 || p.workload_seconds < fastest))
      fastest = p.workload_seconds;
  }
  for (size_t i = 0; i < out.options.size(); ++i) {
    const auto& p = out.options[i];
    if (!p.fits || p.workload_seconds <= 0 || p.workload_seconds > fastest * (1 + o.tie)) continue;
    if (!out.best) {
      out.best = i;
      continue;
    }
    // MoE: a larger N is more conservative; dense: a smaller -ngl.
    const auto& b = out.options[*out.best];
    const bool safer = plan.moe ? p.n_cpu_moe > b.n_cpu_moe : p.ngl < b.ngl;
    if (safer) out.best = i;
  }
  if (plan.smallest_fitting && out.best && *out.best != *plan.smallest_fitting) {
    const auto& b = out.options[*out.best];
    out.notes.push_back(fmt::format(
        "the predicted best safe placement ({}) is more conservative than the memory plan's "
        "smallest fit: it answers within {:.0f}% of the fastest safe one (a tie goes to the "
        "safer placement)",
        plan.moe ? fmt::format("--n-cpu-moe {}", b.n_cpu_moe) : fmt::format("-ngl {}", b.ngl),
        o.tie * 100));
  }
  return out;
}

}  // namespace moetune
