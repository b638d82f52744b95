#include "tune/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "gguf/ggml_type.h"
#include "plan/device_split.h"
#include "tune/ollama_split.h"

namespace moetune {
namespace {

// Plans for one (micro-batch, KV type) at the target context, computed once.
class PlanCache {
 public:
  PlanCache(const ModelInfo* m, const PlanRequest& base) : m_(m), base_(base) {}
  const Plan& Get(int ubatch, uint32_t kv) {
    auto key = std::make_pair(ubatch, kv);
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    PlanRequest r = base_;
    r.ctx.n_ubatch = ubatch;
    r.ctx.n_batch = std::max<int64_t>(r.ctx.n_batch, ubatch);
    r.ctx.type_k = kv;
    r.ctx.type_v = kv;
    r.fine_fill = false;
    auto plan = PlanPlacement(m_->gguf, m_->arch, m_->weights, r);
    if (!plan.ok()) {
      // No memory figures for this variant: nothing is known to fit.
      if (error_.empty()) error_ = plan.error().message();
      return plans_.emplace(key, Plan{}).first->second;
    }
    return plans_.emplace(key, std::move(plan).value()).first->second;
  }
  /// The first planning error, "" when every plan succeeded.
  const std::string& error() const { return error_; }

 private:
  const ModelInfo* m_;
  PlanRequest base_;
  std::map<std::pair<int, uint32_t>, Plan> plans_;
  std::string error_;
};

const PlacementOption* OptionFor(const Plan& p, int n) {
  for (const auto& o : p.options) {
    if (o.n_cpu_moe == n) return &o;
  }
  return nullptr;
}

}  // namespace

std::vector<ThreadCandidate> ThreadCandidates(const CpuTopology& cpu) {
  std::vector<ThreadCandidate> out;
  auto add = [&](int t, const std::string& why) {
    if (t < 1) return;
    for (const auto& c : out) {
      if (c.threads == t) return;
    }
    out.push_back({t, why});
  };
  for (const auto& s : cpu.suggested_threads) {
    std::string why = s.label;
    std::replace(why.begin(), why.end(), '_', ' ');
    add(s.threads, why);
  }
  if (cpu.allowed_physical_cores > 1) {
    add(cpu.allowed_physical_cores - 1, "one core left to the OS and the GPU driver");
  }
  if (out.empty()) add(std::max(1, cpu.logical_cpus), "logical CPUs");
  return out;
}

ServerConfig LlamaDefaults(const std::string& model, const CpuTopology* cpu, int n_layer,
                           int fit_cpu_layers) {
  ServerConfig c;
  c.model = model;
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 0;
  if (fit_cpu_layers > 0 && n_layer > 0) {
    // As -ot rules of the experts of those layers (what the report reads back:
    // config/server_config.h CpuExpertsOf), not as --n-cpu-moe, which counts from layer 0.
    std::vector<int> layers;
    for (int i = std::max(0, n_layer - fit_cpu_layers); i < n_layer; ++i) layers.push_back(i);
    c.placement.overrides.push_back(ExpertLayersRule(layers));
  }
  c.n_batch = 2048;
  c.n_ubatch = 512;
  c.flash_attn = FlashAttn::kDefault;  // auto
  c.threads = cpu != nullptr && cpu->llama_default_threads > 0 ? cpu->llama_default_threads : 4;
  return c;
}

namespace {

// What the memory plan for the target GPU knows before measuring: the
// predicted boundary, which settings fit, their GPU bytes and headroom, and
// the memory map of a whole configuration.
void AddPlanKnowledge(const SpaceInputs& in, TuneSpace* s, std::vector<std::string>* notes) {
  auto cache = std::make_shared<PlanCache>(in.model, *in.plan);
  const Plan& p = cache->Get(s->base.n_ubatch, s->base.type_k);
  s->predicted_boundary = p.best() ? p.best()->n_cpu_moe : s->n_layer;
  s->fixed_n = s->predicted_boundary;
  s->margin = in.plan->margin;
  s->fits = [cache](int n, int ub, uint32_t kv) {
    const PlacementOption* o = OptionFor(cache->Get(ub, kv), n);
    return o != nullptr && o->fits;
  };
  s->gpu_bytes = [cache](int n, int ub, uint32_t kv) -> int64_t {
    const PlacementOption* o = OptionFor(cache->Get(ub, kv), n);
    return o ? o->gpu.total() : -1;
  };
  s->headroom = [cache, ub = s->base.n_ubatch, kv = s->base.type_k](int n) -> int64_t {
    const PlacementOption* o = OptionFor(cache->Get(ub, kv), n);
    return o ? o->headroom : -1;
  };
  s->room = [cache, margin = s->margin](int n, int ub, uint32_t kv) -> std::optional<int64_t> {
    const PlacementOption* o = OptionFor(cache->Get(ub, kv), n);
    if (o == nullptr) return std::nullopt;
    return o->headroom + margin;
  };
  // The memory map of a whole configuration (the pick's own -ub, KV type,
  // flash attention and slots), on the same budget and margin.
  s->memory_of = [m = in.model,
                  req = *in.plan](const ServerConfig& c) -> std::optional<PlacementOption> {
    auto o = PlanServerConfig(m->gguf, m->arch, m->weights, req, c);
    if (!o.ok()) return std::nullopt;
    return std::move(o).value();
  };
  if (!p.best() && notes != nullptr) {
    notes->push_back(
        cache->error().empty()
            ? "the memory plan finds no placement that fits this GPU at the target context; "
              "tune starts from all experts on the CPU"
            : "the memory plan failed (" + cache->error() +
                  "); tune starts from all experts on the CPU");
  }
}

// One configuration of the space's family across devices, for its memory map:
// the space's own configuration of those settings (SettingsConfig places N
// across the devices) at the target context with one slot.
ServerConfig DeviceFamilyConfig(const TuneSpace& s, const PlanRequest& req, int n, int ub,
                                uint32_t kv) {
  TuneSettings t = SettingsOf(s.base);
  t.n = n;
  t.ubatch = ub;
  t.batch = std::max(t.batch, ub);
  t.kv_type = kv;
  ServerConfig c = SettingsConfig(s, t);
  c.ctx_size = req.ctx.n_ctx;
  c.n_parallel = 1;
  return c;
}

// The smallest N in [0, n_layer] for which `fits(n)` holds (n_layer + 1: none),
// by bisection: keeping more experts on the CPU never needs more device memory.
template <typename Fits>
int SmallestFitting(int n_layer, const Fits& fits) {
  if (!fits(n_layer)) return n_layer + 1;
  int lo = 0, hi = n_layer;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (fits(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Several devices (in.plan->devices): the family of placements N = 0..n_layer
// across them, each device's fit and headroom from the exact memory map, and
// llama.cpp's default over the devices (split by free memory, its fit's last
// layers' experts on the CPU until every device fits).
void AddDevicePlanKnowledge(const SpaceInputs& in, TuneSpace* s, std::vector<std::string>* notes) {
  const ModelInfo* m = in.model;
  const PlanRequest req = *in.plan;
  auto splits = SplitsByCpuLayers(m->gguf, m->arch, m->weights, req, req.devices);
  if (!splits.ok()) {
    notes->push_back("the memory plan across the devices failed (" + splits.error().message() +
                     "); tune starts from all experts on the CPU");
    s->predicted_boundary = s->fixed_n = s->n_layer;
    return;
  }
  s->devices = req.devices;
  s->device_splits = std::move(splits).value();
  s->margin = req.margin;
  // Every other order of the devices, each with its own splits (the last
  // device holds the output head, so the order moves it and the boundaries).
  for (std::vector<DeviceBudget>& order : OtherDeviceOrders(req.devices)) {
    auto other = SplitsByCpuLayers(m->gguf, m->arch, m->weights, req, order);
    if (other.ok()) s->other_orders.push_back({std::move(order), std::move(other).value()});
  }
  s->memory_of = [m, req](const ServerConfig& c) -> std::optional<PlacementOption> {
    auto o = PlanServerConfig(m->gguf, m->arch, m->weights, req, c);
    if (!o.ok()) return std::nullopt;
    return std::move(o).value();
  };
  using Key = std::tuple<int, int, uint32_t>;
  auto cache = std::make_shared<std::map<Key, std::optional<PlacementOption>>>();
  auto eval = [cache, space = *s, req](int n, int ub,
                                       uint32_t kv) -> const std::optional<PlacementOption>& {
    const Key k{std::clamp(n, 0, space.n_layer), ub, kv};
    auto it = cache->find(k);
    if (it == cache->end())
      it =
          cache->emplace(k, space.memory_of(DeviceFamilyConfig(space, req, std::get<0>(k), ub, kv)))
              .first;
    return it->second;
  };
  s->fits = [eval](int n, int ub, uint32_t kv) {
    const auto& o = eval(n, ub, kv);
    return o && o->fits;
  };
  s->gpu_bytes = [eval](int n, int ub, uint32_t kv) -> int64_t {
    const auto& o = eval(n, ub, kv);
    return o ? o->gpu.total() : -1;
  };
  s->headroom = [eval, ub = s->base.n_ubatch, kv = s->base.type_k](int n) -> int64_t {
    const auto& o = eval(n, ub, kv);
    return o ? o->headroom : -1;
  };
  s->room = [eval, margin = s->margin](int n, int ub, uint32_t kv) -> std::optional<int64_t> {
    const auto& o = eval(n, ub, kv);
    if (!o) return std::nullopt;
    return o->headroom + margin;
  };
  const int edge = SmallestFitting(
      s->n_layer, [&](int n) { return s->fits(n, s->base.n_ubatch, s->base.type_k); });
  s->predicted_boundary = s->fixed_n = std::min(edge, s->n_layer);
  if (edge > s->n_layer)
    notes->push_back(fmt::format(
        "the memory plan finds no placement that fits the {} devices at the target context; "
        "tune starts from all experts on the CPU",
        req.devices.size()));
}

// llama.cpp's automatic fit across the devices as tune states it: the layers
// split by free memory (no -dev, no -ts), the experts of the last K layers on
// the CPU, K the fewest that fit every device. (llama.cpp's own fit can also
// choose -ts; this is the placement its defaults give without one.)
int DefaultFitAcrossDevices(const SpaceInputs& in, const TuneSpace& s) {
  const ModelInfo* m = in.model;
  auto fits = [&](int k) {
    ServerConfig c = LlamaDefaults(m->path, in.cpu, s.n_layer, k);
    c.ctx_size = in.plan->ctx.n_ctx;
    c.n_parallel = 1;
    auto o = PlanServerConfig(m->gguf, m->arch, m->weights, *in.plan, c);
    return o.ok() && o->fits;
  };
  return std::min(SmallestFitting(s.n_layer, fits), s.n_layer);
}

// Without a memory plan (no GPU figure): no predicted boundary, every N "fits".
void AddNoPlanKnowledge(const SpaceInputs& in, TuneSpace* s, std::vector<std::string>* notes) {
  s->predicted_boundary = 0;
  s->fixed_n = s->moe ? s->n_layer : 0;
  // Without a GPU there is no figure to ask for: the placement decision
  // says once that every layer runs on the CPU.
  if (notes != nullptr && in.engine_has_gpu) {
    notes->push_back(fmt::format(
        "no GPU memory figure (give --vram, or run moetune doctor on a GPU machine): the "
        "command keeps every expert on the CPU (--n-cpu-moe {})",
        s->fixed_n));
  }
}

}  // namespace

TuneSpace BuildTuneSpace(const SpaceInputs& in, std::vector<std::string>* notes) {
  TuneSpace s;
  const ModelInfo& m = *in.model;
  s.model = m.path;
  s.n_layer = static_cast<int>(m.weights.layers.size());
  s.moe = m.arch.is_moe() && m.weights.expert_total() > 0;
  s.placement_matters = in.engine_has_gpu;
  // Without a GPU every layer runs on the host: measured as plan and serve
  // write it (-ngl 0).
  s.base.placement.n_gpu_layers = in.engine_has_gpu ? 99 : 0;
  s.base.n_ubatch = 512;
  s.base.n_batch = 2048;
  s.base.flash_attn = FlashAttn::kOn;
  s.base.type_k = ggml_type::kF16;
  s.base.type_v = ggml_type::kF16;
  s.base.rpc = in.rpc;
  if (!in.threads_override.empty()) {
    for (int t : in.threads_override) s.threads.push_back({t, "given with --threads"});
  } else if (in.cpu != nullptr) {
    s.threads = ThreadCandidates(*in.cpu);
  } else {
    s.threads.push_back({std::max(1, in.fallback_threads), "logical CPUs"});
  }
  std::vector<std::string> scratch;
  if (in.plan && in.plan->devices.size() > 1) {
    AddDevicePlanKnowledge(in, &s, notes != nullptr ? notes : &scratch);
  } else if (in.plan) {
    AddPlanKnowledge(in, &s, notes);
  } else {
    AddNoPlanKnowledge(in, &s, notes);
  }
  // llama.cpp's fit is taken to keep the plan's N layers of experts on the
  // CPU (none without a plan); across devices, as many of the last layers'
  // as make every device fit with the layers split by free memory.
  const int fit_cpu_layers = !in.plan                  ? 0
                             : s.device_splits.empty() ? s.predicted_boundary
                                                       : DefaultFitAcrossDevices(in, s);
  s.defaults =
      LlamaDefaults(m.path, in.cpu, s.n_layer, in.engine_has_gpu && s.moe ? fit_cpu_layers : 0);
  s.defaults->rpc = in.rpc;
  s.defaults_how =
      in.engine_has_gpu && s.moe
          ? fmt::format(
                "llama.cpp's automatic fit (experts of the last {} layers on the CPU, "
                "1 GiB margin{}), -t {}, -b 2048 -ub 512, -fa auto",
                fit_cpu_layers,
                s.devices.empty() ? ""
                                  : fmt::format(", layers split over the {} devices by free memory",
                                                s.devices.size()),
                s.defaults->threads)
          : fmt::format(
                "every layer offloaded (no GPU here, so all on the "
                "CPU), -t {} ({}), -b 2048 -ub 512, -fa auto",
                s.defaults->threads,
                in.cpu ? in.cpu->llama_default_reason : std::string("assumed"));
  // Ollama's whole-layer split, for people who arrive from Ollama: MoE models on a GPU.
  if (in.plan && in.engine_has_gpu && s.moe && s.device_splits.empty()) {
    if (auto o = OllamaWholeLayerSplit(m, *in.plan, in.cpu)) {
      s.ollama = o->config;
      s.ollama_how = o->how;
    }
  }
  return s;
}

}  // namespace moetune
