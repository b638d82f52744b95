#include "report/prediction_report.h"

#include <fmt/format.h>

#include "config/flags.h"
#include "report/uncertainty_report.h"
#include "util/table.h"

namespace moetune {
namespace {

using nlohmann::json;

json SplitJson(const TimeSplit& t) {
  json j = json::object();
  for (int r = 0; r < kResourceCount; ++r) {
    const double v = t.seconds[static_cast<size_t>(r)];
    if (v > 0) j[ResourceName(static_cast<Resource>(r))] = v;
  }
  return j;
}

std::string Tps(const SpeedPrediction& p, bool prefill) {
  if (!p.loads) return "fails";
  return fmt::format("{:.1f}", prefill ? p.prefill.tokens_per_second : p.decode.tokens_per_second);
}

}  // namespace

json SpeedPredictionJson(const SpeedPrediction& p) {
  json j = {{"loads", p.loads}};
  if (!p.loads) {
    j["failure"] = p.failure;
    return j;
  }
  j["prefill_tps"] = p.prefill.tokens_per_second;
  j["decode_tps"] = p.decode.tokens_per_second;
  // The band the machine may measure in (speed/uncertainty.h).
  j["calibrated"] = p.uncertainty.calibrated;
  j["prefill_tps_range"] = BandRangeJson(p.prefill.tokens_per_second, p.uncertainty.prefill);
  j["decode_tps_range"] = BandRangeJson(p.decode.tokens_per_second, p.uncertainty.decode);
  j["prefill_binding"] = ResourceName(p.prefill.binding);
  j["decode_binding"] = ResourceName(p.decode.binding);
  j["prefill_seconds_per_token"] = SplitJson(p.prefill.per_token);
  j["decode_seconds_per_token"] = SplitJson(p.decode.per_token);
  j["gpu_bytes"] = p.gpu_bytes;
  j["spill_bytes"] = p.spill_bytes;
  j["handovers_per_token"] = p.handovers_per_token;
  j["op_offload"] = p.op_offload_active;
  j["notes"] = p.notes;
  return j;
}

void AddPlanPredictionJson(const Plan& plan, const PlanPrediction& pred, json* j) {
  json& opts = (*j)["options"];
  for (size_t i = 0; i < pred.options.size() && i < opts.size(); ++i) {
    const OptionPrediction& o = pred.options[i];
    json p = SpeedPredictionJson(o.depth0);
    // The binding resource of the phase that dominates the workload at depth 0.
    if (o.depth0.loads) {
      const double pf = 1.0 / std::max(1e-12, o.depth0.prefill.tokens_per_second);
      const double tg = 1.0 / std::max(1e-12, o.depth0.decode.tokens_per_second);
      p["binding"] = ResourceName(tg >= pf ? o.depth0.decode.binding : o.depth0.prefill.binding);
    }
    p["at_target"] = SpeedPredictionJson(o.target);
    if (o.target.loads) p["at_target"]["binding"] = ResourceName(o.target.decode.binding);
    p["workload_seconds"] = o.workload_seconds > 0 ? json(o.workload_seconds) : json(nullptr);
    opts[i]["predicted"] = p;
  }
  json best = nullptr;
  if (pred.best) {
    const OptionPrediction& b = pred.options[*pred.best];
    best = {{"n_cpu_moe", plan.moe ? json(b.n_cpu_moe) : json(nullptr)},
            {"ngl", b.ngl},
            {"prefill_tps", b.target.prefill.tokens_per_second},
            {"decode_tps", b.target.decode.tokens_per_second},
            {"prefill_tps_range",
             BandRangeJson(b.target.prefill.tokens_per_second, pred.uncertainty.prefill)},
            {"decode_tps_range",
             BandRangeJson(b.target.decode.tokens_per_second, pred.uncertainty.decode)},
            {"workload_seconds", b.workload_seconds}};
  }
  (*j)["predicted_best"] = best;
  (*j)["prediction"] = {{"machine", pred.machine},
                        {"calibrated", pred.calibrated},
                        {"uncertainty", UncertaintyJson(pred.uncertainty)},
                        {"placement_matters", pred.placement_matters},
                        {"threads", pred.threads},
                        {"target_depth", pred.target_depth},
                        {"notes", pred.notes}};
}

std::string PlanPredictionText(const Plan& plan, const PlanPrediction& pred) {
  std::string o = fmt::format(
      "\nPredicted speed ({} speed model; {} threads; pp512/tg128 tokens/s at depth 0 and at "
      "depth {}):\n  machine: {}\n\n",
      CalibrationWord(pred.uncertainty), pred.threads, pred.target_depth, pred.machine);
  using A = MarkdownTable::Align;
  MarkdownTable t({{plan.moe ? "n-cpu-moe" : "ngl"},
                   {"fits", A::kLeft},
                   {"pp d0"},
                   {"tg d0"},
                   {fmt::format("pp d{}", pred.target_depth)},
                   {fmt::format("tg d{}", pred.target_depth)},
                   {"binding (tg / pp)", A::kLeft},
                   {"note", A::kLeft}});
  for (size_t i = 0; i < pred.options.size(); ++i) {
    const auto& p = pred.options[i];
    std::string note;
    if (pred.best && *pred.best == i) note = "<- predicted best safe";
    if (p.target.spill_bytes > 0)
      note += fmt::format("{}spills {:.0f} MiB", note.empty() ? "" : "; ",
                          static_cast<double>(p.target.spill_bytes) / 1048576.0);
    const std::string binding = p.depth0.loads
                                    ? fmt::format("{} / {}", ResourceName(p.depth0.decode.binding),
                                                  ResourceName(p.depth0.prefill.binding))
                                    : "does not load";
    t.AddRow({std::to_string(plan.moe ? p.n_cpu_moe : p.ngl), p.fits ? "yes" : "no",
              Tps(p.depth0, true), Tps(p.depth0, false), Tps(p.target, true), Tps(p.target, false),
              binding, note});
  }
  o += t.Render();
  if (pred.best) {
    const auto& b = pred.options[*pred.best];
    o += fmt::format(
        "\nPredicted best safe: {} ({:.1f} s for a 1024-token prompt and a 256-token answer at "
        "depth {}; {} range: prefill {} t/s, decode {} t/s)\n",
        plan.moe ? FlagText(FlagId::kNCpuMoe, b.n_cpu_moe) : FlagText(FlagId::kGpuLayers, b.ngl),
        b.workload_seconds, pred.target_depth, CalibrationWord(pred.uncertainty),
        BandRange(b.target.prefill.tokens_per_second, pred.uncertainty.prefill),
        BandRange(b.target.decode.tokens_per_second, pred.uncertainty.decode));
  } else {
    o += "\nNo safe placement: nothing fits with the margin.\n";
  }
  o += UncertaintyText(pred.uncertainty) + "\n";
  for (const auto& n : pred.notes) o += "note: " + n + "\n";
  return o;
}

}  // namespace moetune
