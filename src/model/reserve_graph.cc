#include "model/reserve_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "gguf/ggml_type.h"
#include "model/reserve_graph_builder.h"

namespace moetune {

ReserveDevices ReserveDeviceIndices(const WeightPlacement& placement) {
  const int n = placement.DeviceCount();
  return n > 0 ? ReserveDevices{0, n} : ReserveDevices{-1, 0};
}

namespace {

// Models deeper than this are built from a representative subset of layers.
constexpr int kMaxBuiltLayers = 256;

// Layers whose neighbourhood has not been seen yet: the first and last few,
// and every layer that starts or ends a new pair of (kind, placement)
// signatures. Transient tensors never outlive the next layer, so the peak of
// the full graph is the peak of this subset.
std::vector<int> SelectLayers(const std::vector<uint32_t>& sig) {
  const int n = static_cast<int>(sig.size());
  std::vector<int> keep;
  if (n <= kMaxBuiltLayers) {
    for (int i = 0; i < n; ++i) keep.push_back(i);
    return keep;
  }
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (int i = 0; i < n; ++i) {
    const auto prev =
        std::make_pair(i > 0 ? sig[static_cast<size_t>(i) - 1] : ~0u, sig[static_cast<size_t>(i)]);
    const auto next = std::make_pair(sig[static_cast<size_t>(i)],
                                     i + 1 < n ? sig[static_cast<size_t>(i) + 1] : ~0u);
    const bool edge = i < 8 || i >= n - 8;
    if (edge || !seen.count(prev) || !seen.count(next)) {
      keep.push_back(i);
      seen.insert(prev);
      seen.insert(next);
    }
  }
  return keep;
}

}  // namespace

TensorIndex IndexTensors(const GgufModel& model) {
  TensorIndex index;
  index.reserve(model.tensors.size());
  for (size_t i = 0; i < model.tensors.size(); ++i) index.emplace(model.tensors[i].name, i);
  return index;
}

Result<SimGraph> BuildReserveGraph(const GgufModel& model, const ModelArch& arch,
                                   const TensorIndex& index, const ContextParams& cp,
                                   const ContextLayout& layout, const WeightPlacement& placement) {
  ReserveGraphBuilder b(model, arch, index, cp, layout, placement);
  const int n_layer = static_cast<int>(arch.layers.size());
  std::vector<uint32_t> sig(static_cast<size_t>(n_layer));
  for (int il = 0; il < n_layer; ++il) {
    const LayerInfo& L = arch.layers[static_cast<size_t>(il)];
    uint32_t s = static_cast<uint32_t>(L.attention) | (L.moe ? 16u : 0u);
    // The layer's device (+1: the host is 0) and where each expert kind goes.
    s |= static_cast<uint32_t>(placement.LayerDevice(il, n_layer) + 1) << 5;
    int shift = 13;
    for (const char* kind : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
      const int d = placement.TensorDevice(fmt::format("blk.{}.{}.weight", il, kind), il, n_layer,
                                           TensorRole::kRoutedExperts);
      s |= static_cast<uint32_t>(d + 1) << shift;
      shift += 6;
    }
    sig[static_cast<size_t>(il)] = s;
  }
  return b.Build(SelectLayers(sig));
}

}  // namespace moetune
