#include "plan/check.h"

#include <fmt/format.h>

#include <cmath>

#include "util/table.h"

namespace moetune {

namespace {
constexpr double kModelTolerance = 0.01, kContextTolerance = 0.01, kComputeTolerance = 0.15;
constexpr int64_t kMiB = 1 << 20;
}  // namespace

bool WithinTolerance(int64_t predicted, int64_t engine, double rel) {
  // The engine truncates to whole MiB: the true value lies in [engine, engine + 1 MiB).
  const double lo = static_cast<double>(engine) * (1.0 - rel);
  const double hi = static_cast<double>(engine + kMiB) * (1.0 + rel);
  return static_cast<double>(predicted) >= lo && static_cast<double>(predicted) <= hi;
}

bool PlanCheck::agrees() const {
  if (rows.empty()) return false;
  for (const auto& r : rows) {
    if (!r.ok()) return false;
  }
  return true;
}

PlanCheck ComparePlanWithEngine(const ModelArch& arch, const WeightMap& wm, const PlanRequest& req,
                                const PlacementOption& option,
                                const std::vector<FitParamsDevice>& devices) {
  PlanCheck c;
  c.n_cpu_moe = option.n_cpu_moe;
  c.ngl = option.ngl;
  bool engine_has_gpu = false;
  for (const auto& d : devices) engine_has_gpu = engine_has_gpu || d.name != "Host";
  if (!engine_has_gpu) {
    c.notes.push_back(
        "the engine sees no GPU here, so it keeps every weight, the KV cache and the compute "
        "buffer in host "
        "memory: its Host line is compared with moetune's all-host prediction; the GPU split "
        "itself can only "
        "be checked on the GPU machine");
  }
  const ContextMemory cm = ComputeContextMemory(arch, req.ctx);
  const ComputeEstimate ce = EstimateCompute(arch, req.ctx);
  for (const auto& d : devices) {
    CheckRow r;
    r.device = d.name;
    if (d.name == "Host" && !engine_has_gpu) {
      r.side = "all-host";
      r.predicted_model = wm.total;
      r.predicted_context = cm.total();
      r.predicted_compute = ce.total();
    } else if (d.name == "Host") {
      r.side = "host";
      r.predicted_model = option.host.weights_total();
      r.predicted_context = option.host.kv + option.host.state;
      r.predicted_compute = option.host.compute;
    } else {
      r.side = "gpu";
      r.predicted_model = option.gpu.weights_total();
      r.predicted_context = option.gpu.kv + option.gpu.state;
      r.predicted_compute = option.gpu.compute;
    }
    r.engine_model = d.model_bytes.count();
    r.engine_context = d.context_bytes.count();
    r.engine_compute = d.compute_bytes.count();
    r.model_ok = WithinTolerance(r.predicted_model, r.engine_model, kModelTolerance);
    r.context_ok = WithinTolerance(r.predicted_context, r.engine_context, kContextTolerance);
    r.compute_ok = WithinTolerance(r.predicted_compute, r.engine_compute, kComputeTolerance);
    c.rows.push_back(r);
  }
  if (engine_has_gpu && devices.size() > 2)
    c.notes.push_back(
        "the engine reports several GPUs; moetune plans for one and compares each with it");
  return c;
}

namespace {

nlohmann::json Triple(int64_t p, int64_t e, bool ok) {
  return {{"predicted_bytes", p},
          {"engine_bytes", e},
          {"difference_bytes", p - e},
          {"within_tolerance", ok}};
}

std::string Diff(int64_t p, int64_t e, bool ok) {
  const double pct = e > 0 ? 100.0 * static_cast<double>(p - e) / static_cast<double>(e) : 0.0;
  return fmt::format("{:.1f} / {:.0f} ({:+.1f}%){}", static_cast<double>(p) / kMiB,
                     static_cast<double>(e) / kMiB, pct, ok ? "" : " !");
}

}  // namespace

nlohmann::json PlanCheckJson(const PlanCheck& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"device", r.device},
                    {"compared_with", r.side},
                    {"model", Triple(r.predicted_model, r.engine_model, r.model_ok)},
                    {"context", Triple(r.predicted_context, r.engine_context, r.context_ok)},
                    {"compute", Triple(r.predicted_compute, r.engine_compute, r.compute_ok)}});
  }
  return {{"n_cpu_moe", c.n_cpu_moe},
          {"ngl", c.ngl},
          {"devices", rows},
          {"agrees", c.agrees()},
          {"notes", c.notes},
          {"engine_command", c.argv},
          {"tolerances",
           {{"model", kModelTolerance},
            {"context", kContextTolerance},
            {"compute", kComputeTolerance}}}};
}

std::string PlanCheckText(const PlanCheck& c) {
  std::string o = fmt::format(
      "\nCheck against llama.cpp's dry run (llama-fit-params), -ngl {} --n-cpu-moe {}:\n\n", c.ngl,
      c.n_cpu_moe);
  MarkdownTable t({{"device", MarkdownTable::Align::kLeft},
                   {"compared with", MarkdownTable::Align::kLeft},
                   {"model MiB (moetune / engine)"},
                   {"context MiB"},
                   {"compute MiB"}});
  for (const auto& r : c.rows) {
    t.AddRow({r.device, r.side, Diff(r.predicted_model, r.engine_model, r.model_ok),
              Diff(r.predicted_context, r.engine_context, r.context_ok),
              Diff(r.predicted_compute, r.engine_compute, r.compute_ok)});
  }
  o += t.Render();
  for (const auto& n : c.notes) o += "note: " + n + "\n";
  o += c.agrees() ? "Agreement: within tolerance (model and context 1%, compute 15%).\n"
                  : "Agreement: NO: the cells marked '!' are outside tolerance (model and context "
                    "1%, compute 15%).\n";
  return o;
}

}  // namespace moetune
