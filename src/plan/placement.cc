#include "plan/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "plan/device_split.h"

namespace moetune {
namespace {

constexpr int kExactLayerLimit = 256;  // deeper models: compute buffers per bucket of placements

// Suffix sums over layers, so that any placement's per-device totals cost O(1).
class LayerSums {
 public:
  LayerSums(const GgufModel& model, const ModelArch& arch, const WeightMap& wm,
            const ContextMemory& cm)
      : model_(model),
        arch_(arch),
        cm_(cm),
        n_(static_cast<int>(wm.layers.size())),
        nonexp_(static_cast<size_t>(n_) + 1),
        exp_(static_cast<size_t>(n_) + 1, 0),
        kv_(static_cast<size_t>(n_) + 1, 0),
        state_(static_cast<size_t>(n_) + 1, 0),
        kinds_(static_cast<size_t>(n_)) {
    for (int i = n_ - 1; i >= 0; --i) {
      const auto ui = static_cast<size_t>(i);
      RoleBytes b = wm.layers[ui].bytes;
      exp_[ui] = exp_[ui + 1] + At(b, TensorRole::kRoutedExperts);
      At(b, TensorRole::kRoutedExperts) = 0;
      for (size_t r = 0; r < b.size(); ++r) nonexp_[ui][r] = nonexp_[ui + 1][r] + b[r];
      const LayerContext& lc = cm.layers[ui];
      kv_[ui] = kv_[ui + 1] + lc.k_bytes + lc.v_bytes;
      state_[ui] = state_[ui + 1] + lc.state_bytes;
    }
    for (size_t i = 0; i < model.tensors.size(); ++i) {
      const TensorClass& c = arch.tensors[i];
      if (c.layer < 0 || c.layer >= n_ || c.role != TensorRole::kRoutedExperts) continue;
      kinds_[static_cast<size_t>(c.layer)][TensorKind(model.tensors[i].name)] +=
          static_cast<int64_t>(model.tensors[i].n_bytes);
    }
    all_ = wm.global;
    for (const auto& l : wm.layers)
      for (size_t r = 0; r < all_.size(); ++r) all_[r] += l.bytes[r];
    output_ = wm.global;
    At(output_, TensorRole::kTokenEmbedding) = 0;
    // No output.weight: llama.cpp loads token_embd a second time as the
    // output head on the output's device (TENSOR_DUPLICATED).
    if (At(wm.global, TensorRole::kOutput) == 0)
      tied_output_ = At(wm.global, TensorRole::kTokenEmbedding);
  }

  // Weights, KV and state on the device and on the host for `p`.
  void Split(const WeightPlacement& p, DeviceBreakdown* gpu, DeviceBreakdown* host) const {
    // The first layer on the device (WeightPlacement::LayerOnDevice).
    const int first =
        p.has_device && p.n_gpu_layers >= 1 ? std::clamp(n_ - (p.n_gpu_layers - 1), 0, n_) : n_;
    const auto uf = static_cast<size_t>(first);
    gpu->weights = nonexp_[uf];
    const int first_exp = std::clamp(std::max(first, p.n_cpu_moe), 0, n_);
    int64_t experts = exp_[static_cast<size_t>(first_exp)];
    if (p.override_layer >= first_exp && p.override_layer < n_) {
      const auto& k = kinds_[static_cast<size_t>(p.override_layer)];
      for (const auto& kind : p.override_kinds)
        if (auto it = k.find(kind); it != k.end()) experts -= it->second;
    }
    At(gpu->weights, TensorRole::kRoutedExperts) = experts;
    if (p.OutputOnDevice(n_))
      for (size_t r = 0; r < output_.size(); ++r) gpu->weights[r] += output_[r];
    for (size_t r = 0; r < all_.size(); ++r) host->weights[r] = all_[r] - gpu->weights[r];
    if (p.OutputOnDevice(n_)) At(gpu->weights, TensorRole::kOutput) += tied_output_;
    gpu->kv = kv_[uf];
    host->kv = kv_[0] - gpu->kv;
    gpu->state = state_[uf];
    host->state = state_[0] - gpu->state;
  }

  // The same, tensor by tensor, for any placement: several devices, -ot
  // rules, the last layers' experts. `devices` gets one breakdown per device.
  // (The suffix sums above are the fast path for the planner's sweeps over N;
  // a unit test holds the two equal on one device.)
  void SplitByTensor(const WeightPlacement& p, std::vector<DeviceBreakdown>* devices,
                     DeviceBreakdown* host) const {
    devices->assign(static_cast<size_t>(p.DeviceCount()), DeviceBreakdown{});
    auto side = [&](int d) -> DeviceBreakdown& {
      return d >= 0 ? (*devices)[static_cast<size_t>(d)] : *host;
    };
    for (size_t i = 0; i < model_.tensors.size(); ++i) {
      const TensorClass& c = arch_.tensors[i];
      const std::string& name = model_.tensors[i].name;
      const int d = p.TensorDevice(name, c.layer < n_ ? c.layer : -1, n_, c.role);
      At(side(d).weights, c.role) += static_cast<int64_t>(model_.tensors[i].n_bytes);
    }
    if (tied_output_ > 0 && p.OutputOnDevice(n_))
      At(side(p.OutputDevice(n_)).weights, TensorRole::kOutput) += tied_output_;
    for (const LayerContext& lc : cm_.layers) {
      DeviceBreakdown& b = side(p.LayerDevice(lc.layer, n_));
      b.kv += lc.k_bytes + lc.v_bytes;
      b.state += lc.state_bytes;
    }
  }

  const std::map<std::string, int64_t>& Kinds(int layer) const {
    return kinds_[static_cast<size_t>(layer)];
  }

 private:
  const GgufModel& model_;
  const ModelArch& arch_;
  const ContextMemory& cm_;
  int n_;
  std::vector<RoleBytes> nonexp_;
  std::vector<int64_t> exp_, kv_, state_;
  std::vector<std::map<std::string, int64_t>> kinds_;
  RoleBytes all_{}, output_{};
  int64_t tied_output_ = 0;
};

class Planner {
 public:
  Planner(const GgufModel& model, const ModelArch& arch, const WeightMap& wm,
          const PlanRequest& req, const ContextMemory& cm)
      : req_(req),
        sums_(model, arch, wm, cm),
        estimator_(model, arch),
        n_(static_cast<int>(wm.layers.size())) {}

  Result<PlacementOption> Evaluate(const WeightPlacement& p) {
    PlacementOption o;
    o.placement = p;
    o.n_cpu_moe = p.n_cpu_moe;
    o.ngl = p.n_gpu_layers;
    const bool simple = p.DeviceCount() <= 1 && p.rules().empty() && p.n_cpu_moe_last == 0;
    if (simple) {
      sums_.Split(p, &o.gpu, &o.host);
      if (p.has_device) o.devices = {o.gpu};
    } else {
      sums_.SplitByTensor(p, &o.devices, &o.host);
    }
    MOETUNE_ASSIGN_OR_RETURN(const ComputeBuffers c, Compute(p));
    o.host.compute = c.host;
    for (size_t i = 0; i < o.devices.size() && i < c.per_device.size(); ++i)
      o.devices[i].compute = c.per_device[i];
    if (!simple) {
      o.gpu = {};
      for (const DeviceBreakdown& d : o.devices) {
        for (size_t r = 0; r < d.weights.size(); ++r) o.gpu.weights[r] += d.weights[r];
        o.gpu.kv += d.kv;
        o.gpu.state += d.state;
      }
    }
    o.gpu.compute = c.device;
    const int64_t budget = req_.vram_free - req_.reserve;
    o.headroom = budget - req_.margin - o.gpu.total();
    o.fits = o.headroom >= 0;
    return o;
  }

  const LayerSums& sums() const { return sums_; }

 private:
  // Compute buffers, simulated once per distinct placement; for very deep
  // models, placements in the same bucket of n_layer/32 layers share one.
  Result<ComputeBuffers> Compute(WeightPlacement p) {
    if (n_ > kExactLayerLimit) {
      const int bucket = std::max(1, n_ / 32);
      auto snap = [&](int v) {
        if (v <= 8 || v >= n_ - 8) return v;
        return std::clamp(v / bucket * bucket, 9, n_ - 9);
      };
      p.n_cpu_moe = snap(p.n_cpu_moe);
      p.n_gpu_layers = snap(p.n_gpu_layers);
    }
    if (p.DeviceCount() > 1 || !p.rules().empty() || p.n_cpu_moe_last > 0) {
      // One-off placements (a given command): simulated as they are.
      ++uncached_;
      return estimator_.Estimate(req_.ctx, p, req_.device_kinds);
    }
    const auto key =
        std::make_tuple(p.n_gpu_layers, p.n_cpu_moe, p.override_layer, p.override_kinds);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    MOETUNE_ASSIGN_OR_RETURN(const ComputeBuffers c,
                             estimator_.Estimate(req_.ctx, p, req_.device_kinds));
    cache_.emplace(key, c);
    return c;
  }

 public:
  int simulations() const { return static_cast<int>(cache_.size()) + uncached_; }

 private:
  const PlanRequest& req_;
  LayerSums sums_;
  ComputeEstimator estimator_;
  int n_;
  int uncached_ = 0;
  std::map<std::tuple<int, int, int, std::vector<std::string>>, ComputeBuffers> cache_;
};

// The fine fill: with N layers' experts on the CPU, keep as many of layer
// N-1's expert tensors on the GPU as still fit, the rest on the CPU via -ot.
Status FineFill(Planner& planner, const PlacementOption& base, Plan* plan) {
  const int layer = base.n_cpu_moe - 1;
  std::vector<std::string> kinds;
  for (const auto& [kind, bytes] : planner.sums().Kinds(layer)) kinds.push_back(kind);
  if (kinds.size() < 2 || kinds.size() > 6) return OkStatus();
  std::optional<PlacementOption> best;
  for (unsigned mask = 1; mask + 1 < (1u << kinds.size()); ++mask) {
    WeightPlacement p = base.placement;
    p.n_cpu_moe = layer;
    p.override_layer = layer;
    for (size_t k = 0; k < kinds.size(); ++k)
      if (!(mask & (1u << k))) p.override_kinds.push_back(kinds[k]);
    MOETUNE_ASSIGN_OR_RETURN(PlacementOption o, planner.Evaluate(p));
    if (o.fits && (!best || o.gpu.weights_total() > best->gpu.weights_total())) best = o;
  }
  if (!best || best->gpu.weights_total() <= base.gpu.weights_total()) return OkStatus();
  plan->gpu_bytes_gained = best->gpu.weights_total() - base.gpu.weights_total();
  std::vector<std::string> kept;
  for (const auto& k : kinds)
    if (std::find(best->placement.override_kinds.begin(), best->placement.override_kinds.end(),
                  k) == best->placement.override_kinds.end())
      kept.push_back(k);
  std::string kept_text;
  for (const auto& k : kept) kept_text += (kept_text.empty() ? "" : ", ") + k;
  plan->notes.push_back(fmt::format(
      "fine fill: --n-cpu-moe {} with -ot '{}' keeps only those expert tensors of layer {} on "
      "the CPU; its {} go to the GPU: {} more expert weights there than with --n-cpu-moe {}",
      layer, OverrideValue(layer, best->placement.override_kinds), layer, kept_text,
      FormatBytes(Bytes(plan->gpu_bytes_gained)), base.n_cpu_moe));
  plan->chosen = std::move(best);
  return OkStatus();
}

// Whether the host side of the chosen option fits the RAM available; a note
// when it does not.
void CheckHostRam(const PlanRequest& req, Plan* plan) {
  plan->host_ram_needed = plan->chosen->host.total();
  if (req.host_ram_available > 0 && plan->host_ram_needed > req.host_ram_available) {
    plan->host_ram_fits = false;
    plan->notes.push_back(fmt::format(
        "host RAM: the CPU side needs {} but only {} is available; the page cache will thrash and "
        "decode will drop several times: close programs, add RAM, or use a smaller quant",
        FormatBytes(Bytes(plan->host_ram_needed)), FormatBytes(Bytes(req.host_ram_available))));
  }
}

// No GPU: there is nothing to fit. Every layer, the KV cache and the compute
// buffers stay in host memory, which llama-server says with -ngl 0 alone
// (--n-cpu-moe keeps experts of GPU layers on the CPU: with no GPU layer it
// has nothing to say, so it is not written, whatever the model).
Status PlanHostOnly(Planner& planner, const PlanRequest& req, Plan* plan) {
  WeightPlacement p;  // has_device = false: the CPU is the only device
  p.n_gpu_layers = 0;
  p.n_cpu_moe = plan->moe ? plan->n_layer : 0;
  MOETUNE_ASSIGN_OR_RETURN(PlacementOption o, planner.Evaluate(p));
  o.fits = true;
  o.headroom = 0;
  plan->host_only = true;
  plan->options.push_back(o);
  plan->smallest_fitting = 0;
  plan->chosen = std::move(o);
  plan->config = PlannedConfig(req.model_path, p, req.ctx, /*moe=*/false);
  plan->compute_simulations = planner.simulations();
  plan->notes.push_back(
      "no GPU: every layer, the KV cache and the compute buffers stay in host memory (-ngl 0), "
      "so there is nothing to fit");
  CheckHostRam(req, plan);
  return OkStatus();
}

}  // namespace

Result<PlacementOption> EvaluatePlacement(const GgufModel& model, const ModelArch& arch,
                                          const WeightMap& weights, const ContextParams& ctx,
                                          const WeightPlacement& placement,
                                          const std::vector<DeviceKind>& kinds) {
  MOETUNE_ASSIGN_OR_RETURN(const ContextMemory cm, ComputeContextMemory(arch, ctx));
  PlanRequest req;
  req.ctx = ctx;
  req.device_kinds = kinds;
  Planner planner(model, arch, weights, req, cm);
  return planner.Evaluate(placement);
}

namespace {

// PlanServerConfig across request.devices: each device against its own budget
// and the margin; `fits` when every device fits, `headroom` the tightest one's.
Result<PlacementOption> PlanServerConfigAcrossDevices(const GgufModel& model, const ModelArch& arch,
                                                      const WeightMap& weights,
                                                      const PlanRequest& req,
                                                      const ServerConfig& config) {
  std::vector<std::string> names;
  std::vector<int64_t> free;
  std::vector<DeviceKind> kinds;
  for (const DeviceBudget& d : req.devices) {
    names.push_back(d.name);
    free.push_back(d.free);
  }
  MOETUNE_ASSIGN_OR_RETURN(const WeightPlacement placement, WeightPlacementOf(config, names, free));
  // The devices the configuration uses (its -dev), in its order.
  std::vector<const DeviceBudget*> used;
  for (const DevicePlacement& d : config.placement.devices) {
    for (const DeviceBudget& b : req.devices)
      if (b.name == d.device) used.push_back(&b);
  }
  if (config.placement.devices.empty())
    for (size_t i : DefaultDeviceOrder(names)) used.push_back(&req.devices[i]);
  if (used.size() != static_cast<size_t>(std::max(1, placement.DeviceCount())))
    return Error(ErrorKind::kInvalidArgument, "the configuration names a device the plan lacks");
  kinds.reserve(used.size());
  for (const DeviceBudget* b : used) kinds.push_back(b->kind);
  MOETUNE_ASSIGN_OR_RETURN(PlacementOption o,
                           EvaluatePlacement(model, arch, weights,
                                             ContextOf(config, ReserveOutputs::kPerSequence,
                                                       static_cast<int64_t>(arch.hp.n_ctx_train)),
                                             placement, kinds));
  o.fits = true;
  o.headroom = std::numeric_limits<int64_t>::max();
  for (size_t d = 0; d < used.size() && d < o.devices.size(); ++d) {
    const int64_t h = used[d]->budget() - req.margin - o.devices[d].total();
    o.headroom = std::min(o.headroom, h);
    o.fits = o.fits && h >= 0;
  }
  return o;
}

}  // namespace

Result<PlacementOption> PlanServerConfig(const GgufModel& model, const ModelArch& arch,
                                         const WeightMap& weights, const PlanRequest& request,
                                         const ServerConfig& config) {
  if (request.devices.size() > 1)
    return PlanServerConfigAcrossDevices(model, arch, weights, request, config);
  MOETUNE_ASSIGN_OR_RETURN(const WeightPlacement placement,
                           WeightPlacementOf(config, request.vram_free > 0));
  PlanRequest req = request;
  req.ctx =
      ContextOf(config, ReserveOutputs::kPerSequence, static_cast<int64_t>(arch.hp.n_ctx_train));
  MOETUNE_ASSIGN_OR_RETURN(const ContextMemory cm, ComputeContextMemory(arch, req.ctx));
  Planner planner(model, arch, weights, req, cm);
  return planner.Evaluate(placement);
}

void PlanRequest::SetDevices(const std::vector<DeviceBudget>& budgets) {
  vram_free = reserve = 0;
  device_kinds.clear();
  // In the order llama.cpp's model uses them without -dev (RPC devices first).
  std::vector<std::string> names;
  names.reserve(budgets.size());
  for (const DeviceBudget& d : budgets) names.push_back(d.name);
  std::vector<DeviceBudget> ordered;
  ordered.reserve(budgets.size());
  for (size_t i : DefaultDeviceOrder(names)) ordered.push_back(budgets[i]);
  for (const DeviceBudget& d : ordered) {
    vram_free += d.free;
    reserve += d.reserve;
    device_kinds.push_back(d.kind);
  }
  devices = ordered.size() > 1 ? ordered : std::vector<DeviceBudget>{};
}

Result<Plan> PlanPlacement(const GgufModel& model, const ModelArch& arch, const WeightMap& wm,
                           const PlanRequest& request) {
  // The plan is for the llama-server command it prints, which reserves its
  // compute buffers for one output per sequence (ReserveOutputs).
  PlanRequest req = request;
  req.ctx.reserve_outputs = ReserveOutputs::kPerSequence;
  Plan plan;
  plan.moe = arch.is_moe() && wm.expert_total() > 0;
  plan.n_layer = static_cast<int>(wm.layers.size());
  plan.budget = req.vram_free - req.reserve;
  plan.margin = req.margin;
  MOETUNE_ASSIGN_OR_RETURN(const ContextMemory cm, ComputeContextMemory(arch, req.ctx));
  plan.layout = cm.layout;
  if (req.devices.size() > 1) {
    MOETUNE_TRY(PlanAcrossDevicesInto(model, arch, wm, req, &plan));
    if (plan.chosen) CheckHostRam(req, &plan);
    return plan;
  }
  Planner planner(model, arch, wm, req, cm);
  if (req.vram_free <= 0) {
    MOETUNE_TRY(PlanHostOnly(planner, req, &plan));
    return plan;
  }
  const int n = plan.n_layer;
  WeightPlacement p;
  p.has_device = true;
  if (plan.moe) {
    // -ngl above the layer count puts every layer and the output head on the GPU.
    p.n_gpu_layers = std::max(99, n + 1);
    for (int k = 0; k <= n; ++k) {
      p.n_cpu_moe = k;
      MOETUNE_ASSIGN_OR_RETURN(PlacementOption o, planner.Evaluate(p));
      plan.options.push_back(std::move(o));
    }
    for (size_t i = 0; i < plan.options.size(); ++i) {
      if (plan.options[i].fits) {
        plan.smallest_fitting = i;
        break;
      }
    }
  } else {
    for (int g = 0; g <= n + 1; ++g) {
      p.n_gpu_layers = g;
      MOETUNE_ASSIGN_OR_RETURN(PlacementOption o, planner.Evaluate(p));
      plan.options.push_back(std::move(o));
    }
    for (size_t i = plan.options.size(); i-- > 0;) {
      if (plan.options[i].fits) {
        plan.smallest_fitting = i;
        break;
      }
    }
  }

  if (!plan.smallest_fitting) {
    const PlacementOption& least = *std::min_element(
        plan.options.begin(), plan.options.end(),
        [](const auto& a, const auto& b) { return a.gpu.total() < b.gpu.total(); });
    plan.shortfall = least.gpu.total() + req.margin - plan.budget;
    const std::string what =
        plan.moe ? fmt::format("even with every layer's experts on the CPU (--n-cpu-moe {})", n)
                 : fmt::format("even with {} layers on the GPU (-ngl {})", least.ngl, least.ngl);
    plan.notes.push_back(fmt::format(
        "nothing fits: {} the GPU needs {} + {} margin, but only {} is free: {} short; shorten "
        "the context (-c), quantize the KV cache (--ctk q8_0 --ctv q8_0 with --fa on), use a "
        "smaller --ubatch, free VRAM held by other programs, or run without the GPU",
        what, FormatBytes(Bytes(least.gpu.total())), FormatBytes(Bytes(req.margin)),
        FormatBytes(Bytes(plan.budget)), FormatBytes(Bytes(plan.shortfall))));
    plan.compute_simulations = planner.simulations();
    return plan;
  }

  plan.chosen = plan.options[*plan.smallest_fitting];
  if (plan.moe && req.fine_fill && plan.chosen->n_cpu_moe > 0) {
    MOETUNE_TRY(FineFill(planner, *plan.chosen, &plan));
  }
  plan.compute_simulations = planner.simulations();
  plan.config = PlannedConfig(req.model_path, plan.chosen->placement, req.ctx, plan.moe);

  CheckHostRam(req, &plan);
  return plan;
}

}  // namespace moetune
