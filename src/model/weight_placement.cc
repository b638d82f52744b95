#include "model/weight_placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>

namespace moetune {

struct WeightPlacement::RuleMemo {
  std::mutex mu;
  std::unordered_map<std::string, size_t> rule_of;
};

Status WeightPlacement::SetRules(std::vector<TensorRule> rules) {
  auto compiled = std::make_shared<std::vector<std::regex>>();
  for (const TensorRule& r : rules) {
    if (r.device != kHostDevice && (r.device < 0 || r.device >= std::max(1, DeviceCount()))) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("the -ot rule {} names device {}, but the placement has {}",
                               r.pattern, r.device, DeviceCount()));
    }
    try {
      compiled->emplace_back(r.pattern, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("the -ot pattern {} is not a valid regular expression ({}): fix "
                               "the pattern",
                               r.pattern, e.what()));
    }
  }
  rules_ = std::move(rules);
  compiled_ = std::move(compiled);
  memo_ = std::make_shared<RuleMemo>();
  return OkStatus();
}

int WeightPlacement::DeviceCount() const {
  if (!has_device) return 0;
  return std::max(1, static_cast<int>(split.size()));
}

bool WeightPlacement::HasTensorOverrides() const {
  return n_cpu_moe > 0 || n_cpu_moe_last > 0 || (override_layer >= 0 && !override_kinds.empty()) ||
         !rules_.empty();
}

int WeightPlacement::LayerDevice(int il, int n_layer) const {
  if (!has_device || n_gpu_layers < 1) return kHostDevice;
  const int i_gpu_start = std::max(n_layer + 1 - n_gpu_layers, 0);
  const int act_gpu_layers = std::min(n_gpu_layers, n_layer + 1);
  if (il < i_gpu_start || il - i_gpu_start >= act_gpu_layers) return kHostDevice;
  if (split.size() <= 1) return 0;
  // llama.cpp's split points: cumulative shares, normalised, in float (the
  // same arithmetic, so that whole layer counts land exactly).
  float sum = 0;
  for (float s : split) sum += s;
  const float x = static_cast<float>(il - i_gpu_start) / static_cast<float>(act_gpu_layers);
  float cumulative = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    cumulative += split[i];
    const float point =
        sum > 0 ? cumulative / sum : static_cast<float>(i + 1) / static_cast<float>(split.size());
    if (x < point) return static_cast<int>(i);
  }
  return static_cast<int>(split.size()) - 1;
}

bool WeightPlacement::ExpertsOnHost(int il, int n_layer, std::string_view kind) const {
  if (il < n_cpu_moe || il >= n_layer - n_cpu_moe_last) return true;
  return il == override_layer &&
         std::find(override_kinds.begin(), override_kinds.end(), kind) != override_kinds.end();
}

int WeightPlacement::TensorDevice(std::string_view name, int il, int n_layer,
                                  TensorRole role) const {
  if (il >= 0 && role == TensorRole::kRoutedExperts && has_device &&
      ExpertsOnHost(il, n_layer, TensorKind(name)))
    return kHostDevice;
  if (compiled_ && !compiled_->empty()) {
    const size_t i = MatchingRule(name);
    if (i < rules_.size()) return has_device ? rules_[i].device : kHostDevice;
  }
  if (il >= 0) return LayerDevice(il, n_layer);
  // The input layer stays on the CPU; the output head and norm go with slot n_layer.
  return name.rfind("token_embd", 0) == 0 ? kHostDevice : OutputDevice(n_layer);
}

size_t WeightPlacement::MatchingRule(std::string_view name) const {
  std::string s(name);
  {
    const std::lock_guard<std::mutex> lock(memo_->mu);
    const auto it = memo_->rule_of.find(s);
    if (it != memo_->rule_of.end()) return it->second;
  }
  size_t i = 0;
  while (i < compiled_->size() && !std::regex_search(s, (*compiled_)[i])) ++i;
  const std::lock_guard<std::mutex> lock(memo_->mu);
  memo_->rule_of.emplace(std::move(s), i);
  return i;
}

bool WeightPlacement::OnDevice(int il, int n_layer, TensorRole role, std::string_view kind) const {
  if (!LayerOnDevice(il, n_layer)) return false;
  return role != TensorRole::kRoutedExperts || !ExpertsOnHost(il, n_layer, kind);
}

std::string TensorKind(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return {};
  const size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos) return {};
  const size_t end = name.find('.', dot + 1);
  return std::string(name.substr(dot + 1, end == std::string_view::npos ? end : end - dot - 1));
}

}  // namespace moetune
