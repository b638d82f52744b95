#include "tune/settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "config/flags.h"
#include "plan/device_split.h"

namespace moetune {
namespace {

// The other order `s` names; nullptr for the space's own (order 0).
const TuneSpace::DeviceOrder* OtherOrder(const TuneSpace& space, const TuneSettings& s) {
  if (s.device_order <= 0 || static_cast<size_t>(s.device_order) > space.other_orders.size())
    return nullptr;
  return &space.other_orders[static_cast<size_t>(s.device_order) - 1];
}

int WorkloadPrompt(const TuneOptions& o) {
  return o.workload.prompt_tokens > 0 ? o.workload.prompt_tokens : o.n_prompt;
}

}  // namespace

ServerConfig SettingsConfig(const TuneSpace& space, const TuneSettings& s) {
  ServerConfig c = space.base;
  c.model = space.model;
  c.placement.n_cpu_moe = s.n;
  c.placement.cpu_experts = s.cpu_experts;
  if (s.cpu_experts != CpuExpertsFrom::kFirst) c.placement.n_layer = space.n_layer;
  if (!space.device_splits.empty()) {
    const auto i = static_cast<size_t>(std::clamp(s.n, 0, space.n_layer));
    const TuneSpace::DeviceOrder* other = OtherOrder(space, s);
    const auto& splits = other != nullptr ? other->splits : space.device_splits;
    c.placement = PerDevicePlacement(OrderDevices(space, s), splits[i], space.n_layer, s.n);
  }
  c.n_ubatch = s.ubatch;
  c.n_batch = std::max(s.batch, s.ubatch);
  c.type_k = s.kv_type;
  c.type_v = s.kv_type;
  c.flash_attn = s.flash_attn;
  c.load_mode = s.load_mode;
  c.threads = s.threads;
  return c;
}

TuneSettings SettingsOf(const ServerConfig& c) {
  TuneSettings s;
  s.n = std::max(0, c.placement.n_cpu_moe);  // a dense model's pick writes none (-1)
  // Across devices the split decides the order (SettingsConfig).
  if (c.placement.cpu_experts == CpuExpertsFrom::kLast) s.cpu_experts = CpuExpertsFrom::kLast;
  s.threads = c.threads;
  s.ubatch = c.n_ubatch;
  s.batch = c.n_batch;
  s.flash_attn = c.flash_attn;
  s.kv_type = c.type_k;
  s.load_mode = c.load_mode;
  return s;
}

TuneSettings SettingsOf(const TuneSpace& space, const ServerConfig& c) {
  TuneSettings s = SettingsOf(c);
  const std::vector<std::string> names = c.placement.DeviceNames();
  for (size_t k = 0; k < space.other_orders.size(); ++k) {
    std::vector<std::string> order;
    for (const DeviceBudget& d : space.other_orders[k].devices) order.push_back(d.name);
    if (order == names) s.device_order = static_cast<int>(k + 1);
  }
  return s;
}

std::string DeviceOrderText(const TuneSpace& space, const TuneSettings& s) {
  const Placement p = SettingsConfig(space, s).placement;
  const std::vector<std::string> names = p.DeviceNames();
  std::vector<int> layers;
  for (const DevicePlacement& d : p.devices) layers.push_back(d.layers);
  if (names.empty()) return "";
  return FlagText(FlagId::kDevice, fmt::format("{}", fmt::join(names, ","))) + " " +
         FlagText(FlagId::kTensorSplit, fmt::format("{}", fmt::join(layers, ",")));
}

const std::vector<DeviceBudget>& OrderDevices(const TuneSpace& space, const TuneSettings& s) {
  const TuneSpace::DeviceOrder* other = OtherOrder(space, s);
  return other != nullptr ? other->devices : space.devices;
}

RunConfig TuneRunConfig(const TuneSpace& space, const TuneOptions& o, const TuneSettings& s,
                        bool prefill, int depth) {
  RunConfig c(SettingsConfig(space, s));
  c.n_depth = depth;
  c.n_prompt = prefill ? std::max(o.n_prompt, 1) : 0;
  c.n_gen = prefill ? 0 : std::max(o.n_gen, 1);
  c.repetitions = o.repetitions;
  return c;
}

std::vector<int> LongContextDepths(const TuneOptions& o) {
  std::vector<int> depths;
  if (o.ctx <= o.n_prompt) return depths;
  for (int64_t d : {o.ctx / o.rules.first_depth_divisor, o.ctx - o.n_prompt}) {
    const int di = static_cast<int>(std::max<int64_t>(d, 0));
    if (di > 0 && std::find(depths.begin(), depths.end(), di) == depths.end()) depths.push_back(di);
  }
  return depths;
}

int DeepestDepth(const TuneOptions& o) {
  return static_cast<int>(std::max<int64_t>(o.ctx - o.n_prompt, 0));
}

std::vector<int> MicroBatchCandidates(const TuneSpace& space, const TuneOptions& o) {
  std::vector<int> out;
  for (int ub : space.ubatches) {
    if (ub <= std::max(WorkloadPrompt(o), o.rules.ubatch_always_tried)) out.push_back(ub);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int MicroBatchPrompt(const TuneSpace& space, const TuneOptions& o) {
  const auto ubs = MicroBatchCandidates(space, o);
  const int max_ub = ubs.empty() ? 0 : ubs.back();
  return std::max(o.n_prompt, std::min(max_ub, WorkloadPrompt(o)));
}

}  // namespace moetune
