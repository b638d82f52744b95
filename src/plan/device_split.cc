#include "plan/device_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "config/flags.h"

namespace moetune {
namespace {

constexpr int kExhaustiveDevices = 3;

// Per-layer bytes as prefix sums: sums over a range of layers in O(1).
struct LayerPrefix {
  std::vector<int64_t> base;     // non-expert weights + KV cache + recurrent state
  std::vector<int64_t> experts;  // routed experts
  int64_t output = 0;            // output head and norm (with a tied head's copy)

  int64_t Base(int s, int e) const {
    return base[static_cast<size_t>(e)] - base[static_cast<size_t>(s)];
  }
  int64_t Experts(int s, int e) const {
    return experts[static_cast<size_t>(e)] - experts[static_cast<size_t>(s)];
  }
};

LayerPrefix Prefix(const WeightMap& wm, const ContextMemory& cm) {
  LayerPrefix p;
  const size_t n = wm.layers.size();
  p.base.assign(n + 1, 0);
  p.experts.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t exp = wm.layers[i].experts();
    const LayerContext& lc = cm.layers[i];
    p.base[i + 1] =
        p.base[i] + wm.layers[i].total() - exp + lc.k_bytes + lc.v_bytes + lc.state_bytes;
    p.experts[i + 1] = p.experts[i] + exp;
  }
  RoleBytes out = wm.global;
  At(out, TensorRole::kTokenEmbedding) = 0;
  p.output = Sum(out);
  if (At(wm.global, TensorRole::kOutput) == 0)
    p.output += At(wm.global, TensorRole::kTokenEmbedding);
  return p;
}

// One device's share of a split: its range, the layers whose experts stay on
// the CPU (the first `cpu` of the range) and what is left of its budget.
struct DeviceFill {
  int start = 0, count = 0, cpu = 0;
  int64_t headroom = 0;
};

struct Candidate {
  std::vector<DeviceFill> fill;
  int64_t gpu_experts = -1;
  int64_t min_headroom = std::numeric_limits<int64_t>::min();
  bool feasible = false;
};

// The fewest expert layers on the CPU that let device `d` fit its range.
bool FillDevice(const LayerPrefix& lp, int64_t capacity, DeviceFill* f, int64_t* gpu_experts) {
  const int e = f->start + f->count;
  const int64_t left = capacity - lp.Base(f->start, e);
  if (left < 0) return false;
  for (int k = 0; k <= f->count; ++k) {
    const int64_t exp = lp.Experts(f->start + k, e);
    if (exp <= left) {
      f->cpu = k;
      f->headroom = left - exp;
      *gpu_experts += exp;
      return true;
    }
  }
  return false;
}

Candidate Score(const LayerPrefix& lp, const std::vector<int64_t>& capacity,
                const std::vector<int>& counts) {
  Candidate c;
  c.gpu_experts = 0;
  int start = 0;
  const size_t last = counts.size() - 1;
  for (size_t d = 0; d < counts.size(); ++d) {
    DeviceFill f{start, counts[d], 0, 0};
    const int64_t cap = capacity[d] - (d == last ? lp.output : 0);
    if (!FillDevice(lp, cap, &f, &c.gpu_experts)) return Candidate{};
    c.min_headroom = d == 0 ? f.headroom : std::min(c.min_headroom, f.headroom);
    c.fill.push_back(f);
    start += counts[d];
  }
  c.feasible = true;
  return c;
}

bool Better(const Candidate& a, const Candidate& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.gpu_experts != b.gpu_experts) return a.gpu_experts > b.gpu_experts;
  return a.min_headroom > b.min_headroom;
}

// Layer counts in proportion to the budgets (the search's fallback and its
// answer for more than three devices).
std::vector<int> ProportionalCounts(const std::vector<int64_t>& capacity, int n) {
  double total = 0;
  for (int64_t c : capacity) total += static_cast<double>(std::max<int64_t>(0, c));
  std::vector<int> counts(capacity.size(), 0);
  int given = 0;
  for (size_t d = 0; d + 1 < capacity.size(); ++d) {
    const double share = total > 0 ? static_cast<double>(std::max<int64_t>(0, capacity[d])) / total
                                   : 1.0 / static_cast<double>(capacity.size());
    counts[d] = std::min(n - given, static_cast<int>(std::lround(share * n)));
    given += counts[d];
  }
  counts.back() = n - given;
  return counts;
}

// Every split for up to three devices; the best candidate.
Candidate Search(const LayerPrefix& lp, const std::vector<int64_t>& capacity, int n,
                 int* searched) {
  Candidate best;
  const size_t d = capacity.size();
  auto consider = [&](const std::vector<int>& counts) {
    ++*searched;
    Candidate c = Score(lp, capacity, counts);
    if (Better(c, best)) best = std::move(c);
  };
  if (d == 2) {
    for (int a = 0; a <= n; ++a) consider({a, n - a});
  } else if (d == 3) {
    for (int a = 0; a <= n; ++a)
      for (int b = 0; a + b <= n; ++b) consider({a, b, n - a - b});
  } else {
    consider(ProportionalCounts(capacity, n));
  }
  return best;
}

Placement SplitPlacement(const std::vector<DeviceFill>& fill, const std::vector<DeviceBudget>& devs,
                         int n_layer) {
  Placement p;
  p.n_gpu_layers = std::max(99, n_layer + 1);
  p.n_cpu_moe = -1;
  std::vector<int> cpu;
  for (size_t d = 0; d < fill.size(); ++d) {
    // The last device's -ts count includes the output head (slot n_layer).
    p.devices.push_back({devs[d].name, fill[d].count + (d + 1 == fill.size() ? 1 : 0)});
    for (int k = 0; k < fill[d].cpu; ++k) cpu.push_back(fill[d].start + k);
  }
  if (!cpu.empty()) p.overrides.push_back(ExpertLayersRule(cpu));
  return p;
}

std::vector<std::string> Names(const std::vector<DeviceBudget>& devs) {
  std::vector<std::string> out;
  out.reserve(devs.size());
  for (const auto& d : devs) out.push_back(d.name);
  return out;
}

std::vector<DeviceKind> Kinds(const std::vector<DeviceBudget>& devs) {
  std::vector<DeviceKind> out;
  out.reserve(devs.size());
  for (const auto& d : devs) out.push_back(d.kind);
  return out;
}

// The exact memory map of `fill`, and each device's headroom.
Status Evaluate(const GgufModel& model, const ModelArch& arch, const WeightMap& wm,
                const PlanRequest& req, const std::vector<DeviceBudget>& devs,
                const std::vector<DeviceFill>& fill, DeviceSplitPlan* out) {
  const int n = static_cast<int>(wm.layers.size());
  ServerConfig c;
  c.placement = SplitPlacement(fill, devs, n);
  MOETUNE_ASSIGN_OR_RETURN(const WeightPlacement wp, WeightPlacementOf(c, Names(devs)));
  MOETUNE_ASSIGN_OR_RETURN(out->option,
                           EvaluatePlacement(model, arch, wm, req.ctx, wp, Kinds(devs)));
  ++out->evaluations;
  out->headroom.clear();
  out->fits = true;
  for (size_t d = 0; d < devs.size(); ++d) {
    const int64_t h = devs[d].budget() - req.margin - out->option.devices[d].total();
    out->headroom.push_back(h);
    out->fits = out->fits && h >= 0;
  }
  out->layers.clear();
  out->cpu_expert_layers.clear();
  for (const auto& f : fill) {
    out->layers.push_back(f.count);
    for (int k = 0; k < f.cpu; ++k) out->cpu_expert_layers.push_back(f.start + k);
  }
  return OkStatus();
}

// The least room any device has left when N layers' experts are shared out
// per device over the split `counts` (INT64_MIN: the split has no layer on
// some device, which -ts counts cannot say).
int64_t MinRoom(const LayerPrefix& lp, const std::vector<int64_t>& capacity,
                const std::vector<int>& counts, int n) {
  const int n_layer = static_cast<int>(lp.base.size()) - 1;
  std::vector<DevicePlacement> devs;
  devs.reserve(counts.size());
  for (int c : counts) devs.push_back({"", c});
  const std::vector<int> cpu = PerDeviceCpuLayers(devs, n_layer, n);
  int64_t room = std::numeric_limits<int64_t>::max();
  int start = 0;
  for (size_t d = 0; d < counts.size(); ++d) {
    const int e = start + counts[d];
    int64_t use =
        lp.Base(start, e) + lp.Experts(start, e) + (d + 1 == counts.size() ? lp.output : 0);
    for (int l : cpu)
      if (l >= start && l < e) use -= lp.Experts(l, l + 1);
    room = std::min(room, capacity[d] - use);
    start = e;
  }
  return room;
}

}  // namespace

Placement PerDevicePlacement(const std::vector<DeviceBudget>& devices,
                             const std::vector<int>& layers, int n_layer, int n) {
  Placement p;
  p.n_gpu_layers = std::max(99, n_layer + 1);
  p.n_layer = n_layer;
  p.n_cpu_moe = n;
  p.cpu_experts = CpuExpertsFrom::kPerDevice;
  for (size_t d = 0; d < devices.size() && d < layers.size(); ++d)
    p.devices.push_back({devices[d].name, layers[d] + (d + 1 == layers.size() ? 1 : 0)});
  return p;
}

// What every split across `devs` starts from: the per-layer prefix sums, each
// device's capacity (budget less the margin) and the compute buffers of a
// reference placement (layers by budget, each device's first layer's experts
// on the CPU: op offload copies host experts into the device's compute buffer,
// the larger case), already taken off the capacities. A split that keeps every
// expert on the devices runs with pipeline parallelism and larger compute
// buffers: the exact evaluation of a plan sees them. A dense model has no
// experts to keep on the CPU: an -ot rule for them would match no tensor, yet
// turn off llama.cpp's pipeline parallelism (model/compute_buffers.h), so its
// plans carry none.
struct SplitBasis {
  PlanRequest req;
  int n = 0;
  LayerPrefix lp;
  bool has_experts = false;
  std::vector<int64_t> capacity;
  std::vector<DeviceFill> ref;
  DeviceSplitPlan evaluated;  // the reference placement, evaluated exactly
};

Result<SplitBasis> PrepareSplit(const GgufModel& model, const ModelArch& arch, const WeightMap& wm,
                                const PlanRequest& request, const std::vector<DeviceBudget>& devs) {
  if (devs.size() < 2)
    return Error(ErrorKind::kInvalidArgument, "a split across devices needs at least two devices");
  SplitBasis b;
  b.req = request;
  b.req.ctx.reserve_outputs = ReserveOutputs::kPerSequence;
  MOETUNE_ASSIGN_OR_RETURN(const ContextMemory cm, ComputeContextMemory(arch, b.req.ctx));
  b.n = static_cast<int>(wm.layers.size());
  b.lp = Prefix(wm, cm);
  b.has_experts = b.lp.Experts(0, b.n) > 0;
  b.capacity.reserve(devs.size());
  for (const auto& d : devs) b.capacity.push_back(d.budget() - b.req.margin);
  int start = 0;
  for (int c : ProportionalCounts(b.capacity, b.n)) {
    b.ref.push_back({start, c, b.has_experts ? std::min(c, 1) : 0, 0});
    start += c;
  }
  MOETUNE_TRY(Evaluate(model, arch, wm, b.req, devs, b.ref, &b.evaluated));
  for (size_t d = 0; d < devs.size(); ++d) b.capacity[d] -= b.evaluated.option.devices[d].compute;
  return b;
}

Result<std::vector<std::vector<int>>> SplitsByCpuLayers(const GgufModel& model,
                                                        const ModelArch& arch, const WeightMap& wm,
                                                        const PlanRequest& request,
                                                        const std::vector<DeviceBudget>& devs) {
  MOETUNE_ASSIGN_OR_RETURN(const SplitBasis basis, PrepareSplit(model, arch, wm, request, devs));
  const int n = basis.n;
  const LayerPrefix& lp = basis.lp;
  const std::vector<int64_t>& capacity = basis.capacity;
  std::vector<std::vector<int>> out;
  for (int k = 0; k <= n; ++k) {
    std::vector<int> best = ProportionalCounts(capacity, n);
    int64_t best_room = MinRoom(lp, capacity, best, k);
    auto consider = [&](const std::vector<int>& counts) {
      if (std::find(counts.begin(), counts.end(), 0) != counts.end()) return;
      const int64_t room = MinRoom(lp, capacity, counts, k);
      if (room > best_room) {
        best_room = room;
        best = counts;
      }
    };
    if (devs.size() == 2) {
      for (int a = 1; a < n; ++a) consider({a, n - a});
    } else if (devs.size() == 3) {
      for (int a = 1; a < n; ++a)
        for (int b = 1; a + b < n; ++b) consider({a, b, n - a - b});
    }
    out.push_back(std::move(best));
  }
  return out;
}

Placement DeviceSplitPlacement(const DeviceSplitPlan& plan,
                               const std::vector<DeviceBudget>& devices) {
  std::vector<DeviceFill> fill;
  int start = 0;
  for (size_t d = 0; d < plan.layers.size(); ++d) {
    DeviceFill f{start, plan.layers[d], 0, 0};
    for (int l : plan.cpu_expert_layers)
      if (l >= start && l < start + f.count) ++f.cpu;
    fill.push_back(f);
    start += f.count;
  }
  return SplitPlacement(fill, devices, start);
}

Result<DeviceSplitPlan> PlanAcrossDevices(const GgufModel& model, const ModelArch& arch,
                                          const WeightMap& wm, const PlanRequest& request,
                                          const std::vector<DeviceBudget>& devs) {
  MOETUNE_ASSIGN_OR_RETURN(SplitBasis basis, PrepareSplit(model, arch, wm, request, devs));
  const PlanRequest& req = basis.req;
  const int n = basis.n;
  const LayerPrefix& lp = basis.lp;
  const std::vector<int64_t>& capacity = basis.capacity;
  const std::vector<DeviceFill>& ref = basis.ref;
  const bool has_experts = basis.has_experts;
  DeviceSplitPlan out = std::move(basis.evaluated);

  Candidate best = Search(lp, capacity, n, &out.splits_searched);
  if (!best.feasible) {
    // Nothing fits: every expert on the CPU, layers by budget, for the figures.
    best.fill = ref;
    for (auto& f : best.fill) f.cpu = has_experts ? f.count : 0;
    out.notes.push_back(fmt::format(
        "nothing fits across the {} devices, even with every layer's experts on the CPU: "
        "shorten the context (-c), quantize the KV cache, or add a device",
        devs.size()));
  }
  // Exact evaluation; a device that does not fit moves one more layer's experts.
  for (int step = 0; step <= n; ++step) {
    MOETUNE_TRY(Evaluate(model, arch, wm, req, devs, best.fill, &out));
    if (out.fits) break;
    bool moved = false;
    for (size_t d = 0; d < devs.size(); ++d) {
      auto& f = best.fill[d];
      if (out.headroom[d] < 0 && has_experts && f.cpu < f.count) {
        ++f.cpu;
        moved = true;
      }
    }
    if (!moved) break;
  }
  if (devs.size() > static_cast<size_t>(kExhaustiveDevices))
    out.notes.push_back(fmt::format(
        "{} devices: layers split in proportion to the budgets (every split is searched for up "
        "to {} devices)",
        devs.size(), kExhaustiveDevices));
  return out;
}

}  // namespace moetune

namespace moetune {

std::vector<std::vector<DeviceBudget>> OtherDeviceOrders(const std::vector<DeviceBudget>& devices) {
  std::vector<std::vector<DeviceBudget>> out;
  if (devices.size() > static_cast<size_t>(kExhaustiveDevices)) return out;
  std::vector<size_t> perm(devices.size());
  std::iota(perm.begin(), perm.end(), size_t{0});
  while (std::next_permutation(perm.begin(), perm.end())) {
    std::vector<DeviceBudget>& order = out.emplace_back();
    order.reserve(perm.size());
    for (size_t i : perm) order.push_back(devices[i]);
  }
  return out;
}

Result<OrderedSplitPlan> PlanDeviceOrder(const GgufModel& model, const ModelArch& arch,
                                         const WeightMap& wm, const PlanRequest& req) {
  OrderedSplitPlan out;
  out.devices = req.devices;
  MOETUNE_ASSIGN_OR_RETURN(out.plan, PlanAcrossDevices(model, arch, wm, req, req.devices));
  const bool one_kind =
      std::all_of(req.devices.begin(), req.devices.end(),
                  [&](const DeviceBudget& d) { return d.kind == req.devices.front().kind; });
  if (!one_kind) return out;
  // A plan is better when it fits where the other does not, or keeps fewer
  // layers' experts in host memory; anything else keeps the earlier order.
  auto better = [](const DeviceSplitPlan& a, const DeviceSplitPlan& b) {
    if (a.fits != b.fits) return a.fits;
    return a.cpu_expert_layers.size() < b.cpu_expert_layers.size();
  };
  const size_t engine_layers = out.plan.cpu_expert_layers.size();
  const bool engine_fits = out.plan.fits;
  for (std::vector<DeviceBudget>& devs : OtherDeviceOrders(req.devices)) {
    auto other = PlanAcrossDevices(model, arch, wm, req, devs);
    if (!other.ok() || !better(*other, out.plan)) continue;
    std::string names;
    for (const DeviceBudget& d : devs) names += (names.empty() ? "" : ",") + d.name;
    const std::string order = FlagText(FlagId::kDevice, names);
    out.why = other->fits && !engine_fits
                  ? fmt::format(
                        "the order {} fits, where the engine's own order does not (the "
                        "last device holds the output head)",
                        order)
                  : fmt::format(
                        "the order {} keeps the experts of {} more layer(s) on the "
                        "devices than the engine's own order (the last device holds the "
                        "output head)",
                        order, engine_layers - other->cpu_expert_layers.size());
    out.devices = std::move(devs);
    out.plan = std::move(other).value();
  }
  return out;
}

Status PlanAcrossDevicesInto(const GgufModel& model, const ModelArch& arch, const WeightMap& wm,
                             const PlanRequest& request, Plan* plan) {
  MOETUNE_ASSIGN_OR_RETURN(OrderedSplitPlan ordered, PlanDeviceOrder(model, arch, wm, request));
  PlanRequest req = request;
  req.devices = ordered.devices;
  DeviceSplitPlan& s = ordered.plan;
  if (!ordered.why.empty()) plan->notes.push_back(ordered.why);
  plan->notes.insert(plan->notes.end(), s.notes.begin(), s.notes.end());
  int start = 0;
  for (size_t d = 0; d < req.devices.size(); ++d) {
    DeviceShare share;
    share.device = req.devices[d];
    share.layers = s.layers[d];
    for (int l : s.cpu_expert_layers)
      if (l >= start && l < start + s.layers[d]) share.cpu_expert_layers.push_back(l);
    start += s.layers[d];
    share.use = s.option.devices[d];
    share.headroom = s.headroom[d];
    plan->shares.push_back(std::move(share));
  }
  s.option.fits = s.fits;
  s.option.headroom = *std::min_element(s.headroom.begin(), s.headroom.end());
  plan->options.push_back(s.option);
  plan->compute_simulations = s.evaluations;
  if (!s.fits) {
    plan->shortfall = -s.option.headroom;
    return OkStatus();
  }
  plan->smallest_fitting = 0;
  plan->chosen = s.option;
  ServerConfig c = PlannedConfig(req.model_path, WeightPlacement{}, req.ctx, plan->moe);
  c.placement = DeviceSplitPlacement(s, req.devices);
  plan->config = std::move(c);
  return OkStatus();
}

}  // namespace moetune
