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

Result<PlanCheck> ComparePlanWithEngine(const GgufModel& model, const ModelArch& arch,
                                        const WeightMap& wm, const LaunchConfig& launch,
                                        const std::vector<EngineDeviceSizes>& devices) {
  PlanCheck c;
  c.n_cpu_moe = launch.placement.n_cpu_moe;
  c.ngl = launch.placement.n_gpu_layers;
  const EngineDeviceSizes* device = nullptr;
  int n_devices = 0;
  for (const auto& d : devices) {
    if (d.name == "Host") continue;
    ++n_devices;
    if (!device) device = &d;
  }
  WeightPlacement placement = launch.placement;
  placement.has_device = device != nullptr;
  // The RPC backend does not offload ops on host weights; CUDA (and the other
  // GPU backends) do for large batches.
  const DeviceKind kind =
      device && device->name.rfind("RPC", 0) == 0 ? DeviceKind::kRpc : DeviceKind::kCuda;
  c.device_kind = !device ? "all-host" : kind == DeviceKind::kRpc ? "RPC" : "CUDA";
  if (!device) {
    c.notes.push_back(
        "the engine sees no GPU here, so it keeps every weight, the KV cache and the compute "
        "buffer in host memory: its Host line is compared with moetune's all-host prediction; "
        "use --rpc HOST:PORT (a ggml-rpc-server) to check the device/host split without a GPU");
  } else if (n_devices > 1) {
    c.notes.push_back(
        "the engine reports several devices; moetune plans for one and compares the first (" +
        device->name + ")");
  }
  // llama-fit-params reserves its graph for an output per token of the
  // ubatch (llama-server: one per sequence), so predict for that.
  ContextParams ctx = launch.ctx;
  ctx.reserve_outputs = ReserveOutputs::kAllTokens;
  MOETUNE_ASSIGN_OR_RETURN(const PlacementOption o,
                           EvaluatePlacement(model, arch, wm, ctx, placement, kind));
  for (const auto& d : devices) {
    CheckRow r;
    r.device = d.name;
    const DeviceBreakdown* side = nullptr;
    if (d.name == "Host") {
      r.side = device ? "host" : "all-host";
      side = &o.host;
    } else if (&d == device) {
      r.side = "gpu";
      side = &o.gpu;
    } else {
      r.side = "none";
    }
    if (side) {
      r.predicted_model = side->weights_total();
      r.predicted_context = side->kv + side->state;
      r.predicted_compute = side->compute;
    }
    r.engine_model = d.model;
    r.engine_context = d.context;
    r.engine_compute = d.compute;
    r.model_ok = WithinTolerance(r.predicted_model, r.engine_model, kModelTolerance);
    r.context_ok = WithinTolerance(r.predicted_context, r.engine_context, kContextTolerance);
    r.compute_ok = WithinTolerance(r.predicted_compute, r.engine_compute, kComputeTolerance);
    c.rows.push_back(r);
  }
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
          {"compute_rule", c.device_kind},
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
