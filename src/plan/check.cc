#include "plan/check.h"

#include <algorithm>
#include <cmath>

namespace moetune {

namespace {
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

bool PlanCheck::OnlyComputeOverPredicted() const {
  if (agrees()) return false;
  for (const auto& r : rows) {
    if (!r.model_ok || !r.context_ok) return false;
    if (!r.compute_ok && r.predicted_compute < r.engine_compute) return false;
  }
  return true;
}

Result<PlanCheck> ComparePlanWithEngine(const GgufModel& model, const ModelArch& arch,
                                        const WeightMap& wm, const ServerConfig& config,
                                        const std::vector<EngineDeviceSizes>& devices) {
  PlanCheck c;
  c.n_cpu_moe = std::max(0, config.placement.n_cpu_moe);
  c.ngl = config.placement.n_gpu_layers;
  const EngineDeviceSizes* device = nullptr;
  int n_devices = 0;
  for (const auto& d : devices) {
    if (d.name == "Host") continue;
    ++n_devices;
    if (!device) device = &d;
  }
  MOETUNE_ASSIGN_OR_RETURN(const WeightPlacement placement,
                           WeightPlacementOf(config, device != nullptr));
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
  const ContextParams ctx =
      ContextOf(config, ReserveOutputs::kAllTokens, static_cast<int64_t>(arch.hp.n_ctx_train));
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
    r.model_ok = WithinTolerance(r.predicted_model, r.engine_model, kCheckModelTolerance);
    r.context_ok = WithinTolerance(r.predicted_context, r.engine_context, kCheckContextTolerance);
    r.compute_ok = WithinTolerance(r.predicted_compute, r.engine_compute, kCheckComputeTolerance);
    c.rows.push_back(r);
  }
  return c;
}

}  // namespace moetune
