#include "config/server_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "util/text.h"

namespace moetune {
namespace {

// The routed-expert tensors of one layer, as llama.cpp's --n-cpu-moe names
// them (common/arg.cpp llm_ffn_exps_block_regex).
constexpr const char* kExpertKinds = "ffn_(up|down|gate|gate_up)_(ch|)exps";

// `blk\.L\.(kind|kind)` with buffer CPU: the fine fill as OverrideValue writes it.
bool FineFillFrom(const OverrideRule& r, ExpertTensorsOnCpu* out) {
  constexpr std::string_view kPrefix = "blk\\.";
  std::string_view p = r.pattern;
  if (r.buft != "CPU" || p.substr(0, kPrefix.size()) != kPrefix) return false;
  p.remove_prefix(kPrefix.size());
  const std::string_view digits = LeadingDigits(p);
  ExpertTensorsOnCpu f;
  const auto layer = digits.size() <= 6 ? ParseIntInRange(digits, 0, 999999) : std::nullopt;
  if (!layer) return false;
  f.layer = static_cast<int>(*layer);
  p.remove_prefix(digits.size());
  if (p.substr(0, 3) != "\\.(" || p.size() < 5 || p.back() != ')') return false;
  p = p.substr(3, p.size() - 4);
  size_t start = 0;
  while (start <= p.size()) {
    size_t bar = p.find('|', start);
    if (bar == std::string_view::npos) bar = p.size();
    const std::string_view kind = p.substr(start, bar - start);
    if (kind.empty() ||
        kind.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string_view::npos)
      return false;
    f.kinds.emplace_back(kind);
    start = bar + 1;
  }
  *out = std::move(f);
  return true;
}

}  // namespace

Status Placement::AddOverrideTensor(std::string_view value) {
  MOETUNE_ASSIGN_OR_RETURN(const std::vector<OverrideRule> rules, ParseTensorOverrides(value));
  // A leading run of fine-fill rules becomes the fine fill (so that writing
  // them again gives the same value); the rest stays as given.
  for (const auto& r : rules) {
    ExpertTensorsOnCpu f;
    if (overrides.empty() && FineFillFrom(r, &f)) {
      fine_fill.push_back(std::move(f));
    } else {
      overrides.push_back(r);
    }
  }
  return OkStatus();
}

Status Placement::SetOverrideTensor(std::string_view value) {
  fine_fill.clear();
  overrides.clear();
  if (value.empty()) return OkStatus();
  return AddOverrideTensor(value);
}

OverrideRule ExpertLayersRule(const std::vector<int>& layers) {
  std::string list;
  for (int i : layers) list += (list.empty() ? "" : "|") + std::to_string(i);
  return {fmt::format("blk\\.({})\\.{}", list, kExpertKinds), "CPU"};
}

namespace {

// The layers of a rule in ExpertLayersRule's form; nullopt for any other rule.
std::optional<std::vector<int>> ExpertLayersOf(const OverrideRule& r) {
  constexpr std::string_view kPrefix = "blk\\.(";
  const std::string suffix = std::string(")\\.") + kExpertKinds;
  std::string_view p = r.pattern;
  if (r.buft != "CPU" || p.size() <= kPrefix.size() + suffix.size() ||
      p.substr(0, kPrefix.size()) != kPrefix || p.substr(p.size() - suffix.size()) != suffix)
    return std::nullopt;
  p = p.substr(kPrefix.size(), p.size() - kPrefix.size() - suffix.size());
  std::vector<int> layers;
  size_t start = 0;
  while (start <= p.size()) {
    size_t bar = p.find('|', start);
    if (bar == std::string_view::npos) bar = p.size();
    const std::string_view digits = p.substr(start, bar - start);
    const auto layer = digits.size() == LeadingDigits(digits).size() && digits.size() <= 6
                           ? ParseIntInRange(digits, 0, 999999)
                           : std::nullopt;
    if (!layer) return std::nullopt;
    layers.push_back(static_cast<int>(*layer));
    start = bar + 1;
  }
  return layers;
}

}  // namespace

CpuExperts CpuExpertsOf(const Placement& p) {
  CpuExperts out;
  out.all = p.all_cpu_moe;
  std::vector<int> layers;
  if (!p.all_cpu_moe && p.cpu_experts == CpuExpertsFrom::kFirst) {
    for (int i = 0; i < p.n_cpu_moe; ++i) layers.push_back(i);
  }
  for (const auto& f : p.fine_fill) out.partial.push_back(f.layer);
  for (const auto& r : p.Rules()) {
    if (auto l = ExpertLayersOf(r)) {
      layers.insert(layers.end(), l->begin(), l->end());
      out.from_ot = true;
    } else if (std::find(p.overrides.begin(), p.overrides.end(), r) != p.overrides.end()) {
      out.unread.push_back(r);
    }
  }
  std::sort(layers.begin(), layers.end());
  layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
  if (!out.all) out.layers = std::move(layers);
  return out;
}

std::vector<int> PerDeviceCpuLayers(const std::vector<DevicePlacement>& devices, int n_layer,
                                    int n) {
  // Each device's range of repeating layers.
  std::vector<int> range;
  int start = 0;
  for (size_t d = 0; d < devices.size(); ++d) {
    const int count = d + 1 == devices.size() ? n_layer - start : devices[d].layers;
    range.push_back(std::clamp(count, 0, std::max(0, n_layer - start)));
    start += range.back();
  }
  n = std::clamp(n, 0, start);
  std::vector<int> take(range.size(), 0);
  std::vector<std::pair<int64_t, size_t>> remainders;  // (remainder, device)
  int given = 0;
  for (size_t d = 0; d < range.size(); ++d) {
    const int64_t share = int64_t{n} * range[d];
    take[d] = start > 0 ? static_cast<int>(share / start) : 0;
    given += take[d];
    remainders.emplace_back(start > 0 ? share % start : 0, d);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < n && i < remainders.size(); ++i) {
    const size_t d = remainders[i].second;
    if (take[d] < range[d]) {
      ++take[d];
      ++given;
    }
  }
  // Rounding can leave a full device short; the rest go where there is room.
  for (size_t d = 0; given < n && d < range.size(); ++d) {
    const int more = std::min(n - given, range[d] - take[d]);
    take[d] += more;
    given += more;
  }
  std::vector<int> layers;
  start = 0;
  for (size_t d = 0; d < range.size(); ++d) {
    for (int k = 0; k < take[d]; ++k) layers.push_back(start + k);
    start += range[d];
  }
  return layers;
}

std::vector<OverrideRule> Placement::Rules() const {
  std::vector<OverrideRule> out;
  if (cpu_experts == CpuExpertsFrom::kLast && n_cpu_moe > 0 && n_layer > 0) {
    std::vector<int> layers;
    for (int i = std::max(0, n_layer - n_cpu_moe); i < n_layer; ++i) layers.push_back(i);
    out.push_back(ExpertLayersRule(layers));
  }
  if (cpu_experts == CpuExpertsFrom::kPerDevice && n_cpu_moe > 0 && n_layer > 0 &&
      !devices.empty()) {
    const std::vector<int> layers = PerDeviceCpuLayers(devices, n_layer, n_cpu_moe);
    if (!layers.empty()) out.push_back(ExpertLayersRule(layers));
  }
  for (const auto& f : fine_fill) {
    const std::string value = OverrideValue(f.layer, f.kinds);
    out.push_back({value.substr(0, value.size() - 4), "CPU"});  // without "=CPU"
  }
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

std::string Placement::OverrideTensor() const {
  const std::vector<OverrideRule> rules = Rules();
  if (rules.empty()) return "";
  // common/arg.cpp splits -ot at ',': patterns go without ',', ';' or '=' (an
  // unparseable pattern is passed as given, for the engine to refuse).
  auto value = OverridesForCommon(rules);
  if (value.ok()) return *value;
  std::string joined;
  for (const auto& r : rules) joined += (joined.empty() ? "" : ",") + r.pattern + "=" + r.buft;
  return joined;
}

int Placement::WrittenNCpuMoe() const {
  if (all_cpu_moe || cpu_experts != CpuExpertsFrom::kFirst) return -1;
  return n_cpu_moe;
}

const char* FlashAttnName(FlashAttn fa) {
  switch (fa) {
    case FlashAttn::kDefault:
      return "";
    case FlashAttn::kOn:
      return "on";
    case FlashAttn::kOff:
      return "off";
    case FlashAttn::kAuto:
      return "auto";
  }
  return "";
}

Result<FlashAttn> ParseFlashAttn(std::string_view value) {
  if (value.empty()) return FlashAttn::kDefault;
  if (value == "on" || value == "enabled" || value == "true" || value == "1") return FlashAttn::kOn;
  if (value == "off" || value == "disabled" || value == "false" || value == "0")
    return FlashAttn::kOff;
  if (value == "auto" || value == "-1") return FlashAttn::kAuto;
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("flash attention '{}' is not on, off or auto (llama.cpp also accepts "
                           "1/0/-1, true/false, enabled/disabled)",
                           value));
}

const char* LoadModeName(LoadMode mode) {
  switch (mode) {
    case LoadMode::kDefault:
      return "";
    case LoadMode::kAuto:
      return "auto";
    case LoadMode::kNone:
      return "none";
    case LoadMode::kMmap:
      return "mmap";
    case LoadMode::kMlock:
      return "mlock";
    case LoadMode::kMmapMlock:
      return "mmap+mlock";
    case LoadMode::kDio:
      return "dio";
  }
  return "";
}

Result<LoadMode> ParseLoadMode(std::string_view value) {
  for (LoadMode m : {LoadMode::kDefault, LoadMode::kAuto, LoadMode::kNone, LoadMode::kMmap,
                     LoadMode::kMlock, LoadMode::kMmapMlock, LoadMode::kDio}) {
    if (value == LoadModeName(m)) return m;
  }
  return Error(
      ErrorKind::kInvalidArgument,
      fmt::format("load mode '{}' is not auto, none, mmap, mlock, mmap+mlock or dio", value));
}

const char* SwitchName(Switch s) {
  switch (s) {
    case Switch::kDefault:
      return "";
    case Switch::kOn:
      return "on";
    case Switch::kOff:
      return "off";
  }
  return "";
}

std::string OverrideValue(int layer, const std::vector<std::string>& kinds) {
  std::string alt;
  for (size_t i = 0; i < kinds.size(); ++i) alt += (i ? "|" : "") + kinds[i];
  return fmt::format("blk\\.{}\\.({})=CPU", layer, alt);
}

ContextParams ContextOf(const ServerConfig& c, ReserveOutputs reserve, int64_t model_ctx) {
  ContextParams x;
  x.n_ctx = c.ctx_size > 0 ? c.ctx_size : (model_ctx > 0 ? model_ctx : 4096);
  // llama-server's -np -1 (auto) is 4 slots with one unified cache
  // (tools/server/server.cpp: params.n_parallel = 4, kv_unified = true).
  const bool auto_slots = c.n_parallel <= 0;
  x.n_seq = auto_slots ? 4 : c.n_parallel;
  x.kv_unified = c.kv_unified == Switch::kOn || (auto_slots && c.kv_unified != Switch::kOff);
  x.type_k = c.type_k;
  x.type_v = c.type_v;
  x.n_ubatch = c.n_ubatch;
  x.n_batch = c.n_batch;
  x.flash_attn = c.flash_attn != FlashAttn::kOff;
  x.reserve_outputs = reserve;
  return x;
}

namespace {

// The device index an -ot buffer type names among `devices`: the CPU, a
// device's host buffer ("CUDA0_Host", pinned memory) or a device.
Result<int> RuleDevice(const OverrideRule& r, const std::vector<std::string>& devices) {
  if (r.buft == "CPU" || (r.buft.size() > 5 && r.buft.ends_with("_Host"))) return kHostDevice;
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i] == r.buft) return static_cast<int>(i);
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("the -ot rule {}={} names a buffer the placement has no device for "
                           "(devices: {}): name CPU or one of the devices",
                           r.pattern, r.buft,
                           devices.empty() ? "none" : fmt::format("{}", fmt::join(devices, ", "))));
}

}  // namespace

std::vector<std::string> Placement::DeviceNames() const {
  std::vector<std::string> out;
  out.reserve(devices.size());
  for (const DevicePlacement& d : devices) out.push_back(d.device);
  return out;
}

std::vector<size_t> DefaultDeviceOrder(const std::vector<std::string>& devices) {
  std::vector<size_t> order;
  for (bool rpc : {true, false}) {
    for (size_t i = 0; i < devices.size(); ++i)
      if ((devices[i].rfind("RPC", 0) == 0) == rpc) order.push_back(i);
  }
  return order;
}

Result<WeightPlacement> WeightPlacementOf(const ServerConfig& c,
                                          const std::vector<std::string>& devices,
                                          const std::vector<int64_t>& free) {
  const Placement& p = c.placement;
  WeightPlacement w;
  // A -dev list picks and orders the devices, and its -ts splits the layers.
  std::vector<std::string> used;
  if (!p.devices.empty()) {
    for (const DevicePlacement& d : p.devices) {
      used.push_back(d.device);
      w.split.push_back(static_cast<float>(d.layers));
    }
  } else {
    // llama.cpp's default: its own order, in proportion to each device's free memory.
    const bool known = free.size() == devices.size() &&
                       std::all_of(free.begin(), free.end(), [](int64_t f) { return f > 0; });
    for (size_t i : DefaultDeviceOrder(devices)) {
      used.push_back(devices[i]);
      if (devices.size() > 1) w.split.push_back(known ? static_cast<float>(free[i]) : 1.0f);
    }
  }
  w.has_device = !used.empty();
  w.n_gpu_layers = p.n_gpu_layers < 0 ? 999 : p.n_gpu_layers;
  if (p.all_cpu_moe) {
    w.n_cpu_moe = static_cast<int>(kMaxLayers);
  } else if (p.cpu_experts == CpuExpertsFrom::kLast) {
    w.n_cpu_moe_last = std::max(0, p.n_cpu_moe);
  } else if (p.cpu_experts == CpuExpertsFrom::kPerDevice) {
    // Placed with the other rules below: its layers are listed in an -ot rule.
  } else {
    w.n_cpu_moe = std::max(0, p.n_cpu_moe);
  }
  std::vector<ExpertTensorsOnCpu> fills = p.fine_fill;
  if (!fills.empty()) {
    w.override_layer = fills.front().layer;
    w.override_kinds = fills.front().kinds;
    fills.erase(fills.begin());
  }
  // Every other rule by its pattern: further fine-filled layers, then the rest.
  std::vector<TensorRule> rules;
  if (p.cpu_experts == CpuExpertsFrom::kPerDevice && !p.all_cpu_moe) {
    const std::vector<int> layers = PerDeviceCpuLayers(p.devices, p.n_layer, p.n_cpu_moe);
    if (!layers.empty()) rules.push_back({ExpertLayersRule(layers).pattern, kHostDevice});
  }
  Placement rest;
  rest.fine_fill = fills;
  rest.overrides = p.overrides;
  for (const OverrideRule& r : rest.Rules()) {
    MOETUNE_ASSIGN_OR_RETURN(const int d, RuleDevice(r, used));
    rules.push_back({r.pattern, d});
  }
  MOETUNE_TRY(w.SetRules(std::move(rules)));
  return w;
}

Result<WeightPlacement> WeightPlacementOf(const ServerConfig& c, bool has_device) {
  return WeightPlacementOf(
      c, has_device ? std::vector<std::string>{"CUDA0"} : std::vector<std::string>{});
}

ServerConfig PlannedConfig(const std::string& model, const WeightPlacement& placement,
                           const ContextParams& ctx, bool moe) {
  ServerConfig c;
  c.model = model;
  c.placement.n_gpu_layers = placement.n_gpu_layers;
  c.placement.n_cpu_moe = moe ? placement.n_cpu_moe : -1;
  if (placement.override_layer >= 0 && !placement.override_kinds.empty())
    c.placement.fine_fill.push_back({placement.override_layer, placement.override_kinds});
  c.ctx_size = ctx.n_ctx;
  c.n_parallel = ctx.n_seq;
  if (ctx.kv_unified && ctx.n_seq > 1) c.kv_unified = Switch::kOn;
  c.n_ubatch = static_cast<int>(ctx.n_ubatch);
  c.n_batch = static_cast<int>(ctx.n_batch);
  c.flash_attn = ctx.flash_attn ? FlashAttn::kOn : FlashAttn::kOff;
  c.type_k = ctx.type_k;
  c.type_v = ctx.type_v;
  c.fit = Switch::kOff;
  return c;
}

}  // namespace moetune
