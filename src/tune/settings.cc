#include "tune/settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "config/flags.h"
#include "plan/device_split.h"

namespace moetune {
namespace {

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
    const bool other =
        s.device_order > 0 && static_cast<size_t>(s.device_order) <= space.other_orders.size();
    const auto& splits = other ? space.other_orders[static_cast<size_t>(s.device_order) - 1].splits
                               : space.device_splits;
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
  auto same = [&](const std::vector<DeviceBudget>& devices) {
    if (devices.size() != c.placement.devices.size()) return false;
    for (size_t d = 0; d < devices.size(); ++d)
      if (devices[d].name != c.placement.devices[d].device) return false;
    return true;
  };
  for (size_t k = 0; k < space.other_orders.size(); ++k)
    if (same(space.other_orders[k].devices)) s.device_order = static_cast<int>(k + 1);
  return s;
}

std::string DeviceOrderText(const TuneSpace& space, const TuneSettings& s) {
  std::vector<std::string> names, layers;
  for (const DevicePlacement& d : SettingsConfig(space, s).placement.devices) {
    names.push_back(d.device);
    layers.push_back(std::to_string(d.layers));
  }
  if (names.empty()) return "";
  return FlagText(FlagId::kDevice, fmt::format("{}", fmt::join(names, ","))) + " " +
         FlagText(FlagId::kTensorSplit, fmt::format("{}", fmt::join(layers, ",")));
}

const std::vector<DeviceBudget>& OrderDevices(const TuneSpace& space, const TuneSettings& s) {
  if (s.device_order > 0 && static_cast<size_t>(s.device_order) <= space.other_orders.size())
    return space.other_orders[static_cast<size_t>(s.device_order) - 1].devices;
  return space.devices;
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
