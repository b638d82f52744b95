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
  c.placement = config.placement;
  std::vector<std::string> names;
  std::vector<int64_t> free;
  for (const auto& d : devices) {
    if (d.name == "Host") continue;
    names.push_back(d.name);
    free.push_back(d.free);
  }
  MOETUNE_ASSIGN_OR_RETURN(const WeightPlacement placement, WeightPlacementOf(config, names, free));
  // The RPC backend does not offload ops on host weights; CUDA (and the other
  // GPU backends) do for large batches.
  std::vector<DeviceKind> kinds;
  kinds.reserve(names.size());
  for (const auto& n : names)
    kinds.push_back(n.rfind("RPC", 0) == 0 ? DeviceKind::kRpc : DeviceKind::kCuda);
  const bool any_rpc = std::find(kinds.begin(), kinds.end(), DeviceKind::kRpc) != kinds.end();
  const bool any_cuda = std::find(kinds.begin(), kinds.end(), DeviceKind::kCuda) != kinds.end();
  c.device_kind = names.empty()         ? "all-host"
                  : any_rpc && any_cuda ? "mixed"
                  : any_rpc             ? "RPC"
                                        : "CUDA";
  if (names.empty()) {
    c.notes.push_back(
        "the engine sees no GPU here, so it keeps every weight, the KV cache and the compute "
        "buffer in host memory: its Host line is compared with moetune's all-host prediction; "
        "use --rpc HOST:PORT (a ggml-rpc-server) to check the device/host split without a GPU");
  } else if (names.size() > 1 && config.placement.devices.empty() &&
             !std::all_of(free.begin(), free.end(), [](int64_t f) { return f > 0; })) {
    c.notes.push_back(
        "several devices and no -ts: llama.cpp splits the layers by each device's free memory, "
        "which the engine did not report here, so equal shares are assumed");
  }
  // llama-fit-params reserves its graph for an output per token of the
  // ubatch (llama-server: one per sequence), so predict for that.
  const ContextParams ctx =
      ContextOf(config, ReserveOutputs::kAllTokens, static_cast<int64_t>(arch.hp.n_ctx_train));
  MOETUNE_ASSIGN_OR_RETURN(const PlacementOption o,
                           EvaluatePlacement(model, arch, wm, ctx, placement, kinds));
  size_t next_device = 0;  // the engine lists its devices in the placement's order
  for (const auto& d : devices) {
    CheckRow r;
    r.device = d.name;
    const DeviceBreakdown* side = nullptr;
    if (d.name == "Host") {
      r.side = names.empty() ? "all-host" : "host";
      side = &o.host;
    } else if (next_device < o.devices.size()) {
      r.side = "gpu";
      side = &o.devices[next_device++];
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
