#include "model/weight_placement.h"

#include <algorithm>

namespace moetune {

bool WeightPlacement::LayerOnDevice(int il, int n_layer) const {
  // -ngl offloads the output layer, then the last n_gpu_layers - 1 layers.
  return has_device && n_gpu_layers >= 1 && il >= std::max(0, n_layer - (n_gpu_layers - 1));
}

bool WeightPlacement::OnDevice(int il, int n_layer, TensorRole role, std::string_view kind) const {
  if (!LayerOnDevice(il, n_layer)) return false;
  if (role != TensorRole::kRoutedExperts) return true;
  if (il < n_cpu_moe) return false;
  if (il == override_layer &&
      std::find(override_kinds.begin(), override_kinds.end(), kind) != override_kinds.end())
    return false;
  return true;
}

std::string TensorKind(std::string_view name) {
  if (name.substr(0, 4) != "blk.") return {};
  const size_t dot = name.find('.', 4);
  if (dot == std::string_view::npos) return {};
  const size_t end = name.find('.', dot + 1);
  return std::string(name.substr(dot + 1, end == std::string_view::npos ? end : end - dot - 1));
}

}  // namespace moetune
