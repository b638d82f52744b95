#include "speed/model_shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "config/server_config.h"

namespace moetune {

double ModelShape::ExpertsTouched(int tokens) const {
  if (n_expert <= 0 || tokens <= 0) return 1.0;
  const double k = std::min(1.0, static_cast<double>(n_expert_used) / n_expert);
  return 1.0 - std::pow(1.0 - k, tokens);
}

ModelShape BuildModelShape(const ModelInfo& m) {
  ModelShape s;
  const Hparams& hp = m.arch.hp;
  s.name = hp.name.empty() ? m.path : hp.name;
  s.n_expert = static_cast<int>(hp.n_expert);
  s.n_expert_used = static_cast<int>(hp.n_expert_used);
  s.n_embd = static_cast<int>(hp.n_embd);
  s.n_vocab = static_cast<int>(hp.n_vocab);
  s.layers.resize(m.arch.layers.size());
  for (size_t i = 0; i < m.arch.layers.size(); ++i) {
    const LayerInfo& L = m.arch.layers[i];
    LayerShape& ls = s.layers[i];
    ls.index = L.index;
    ls.attention = L.attention;
    ls.has_kv = L.has_kv;
    ls.window = L.window;
    ls.n_head = L.n_head;
    ls.n_embd_k_gqa = L.n_embd_k_gqa;
    ls.n_embd_v_gqa = L.n_embd_v_gqa;
    // Query head size: K width per KV head (MLA caches one compressed "head").
    ls.head_dim = hp.n_embd_head_k > 0 ? hp.n_embd_head_k : (L.n_head ? hp.n_embd / L.n_head : 0);
    if (L.attention == AttentionKind::kRecurrent)
      ls.state_bytes = static_cast<double>(hp.n_embd_r() + hp.n_embd_s()) * 4.0;
  }
  bool has_output = false;
  WeightGroup norms;
  for (size_t i = 0; i < m.gguf.tensors.size(); ++i) {
    const TensorInfo& t = m.gguf.tensors[i];
    const TensorClass& c = m.arch.tensors[i];
    double params = 1;
    for (int64_t d : t.ne) params *= static_cast<double>(std::max<int64_t>(d, 1));
    const WeightGroup w{static_cast<double>(t.n_bytes), params};
    s.total_bytes += w.bytes;
    s.total_params += w.params;
    if (c.layer >= 0 && c.layer < static_cast<int>(s.layers.size())) {
      LayerShape& ls = s.layers[static_cast<size_t>(c.layer)];
      if (c.role == TensorRole::kRoutedExperts) {
        ls.experts += w;
      } else if (c.role == TensorRole::kSharedExperts) {
        ls.shared += w;
      } else {
        ls.dense += w;
      }
    } else if (c.role == TensorRole::kOutput) {
      s.output += w;
      has_output = true;
    } else if (c.role == TensorRole::kTokenEmbedding) {
      s.token_embd += w;
    } else {
      norms += w;
    }
  }
  // Tied embeddings: the LM head reads token_embd (src/llama-model.cpp: output
  // falls back to tok_embd with TENSOR_DUPLICATED).
  if (!has_output) s.output = s.token_embd;
  s.output += norms;
  for (const auto& l : m.weights.layers)
    s.biggest_expert_layer = std::max(s.biggest_expert_layer, l.experts());
  return s;
}

Result<Residency> ResolveResidency(const ModelInfo& m, const ModelShape& shape,
                                   const WeightPlacement& placement) {
  Residency r;
  const int n_layer = static_cast<int>(shape.layers.size());
  r.layers.resize(shape.layers.size());
  r.output_device = placement.OutputDevice(n_layer);
  r.output_on_gpu = r.output_device != kHostDevice;
  std::vector<double> expert_gpu(shape.layers.size(), 0), dense_gpu(shape.layers.size(), 0);
  std::vector<double> dense_all(shape.layers.size(), 0);
  for (size_t i = 0; i < m.gguf.tensors.size(); ++i) {
    const TensorInfo& t = m.gguf.tensors[i];
    const TensorClass& c = m.arch.tensors[i];
    const double bytes = static_cast<double>(t.n_bytes);
    const bool in_layer = c.layer >= 0 && c.layer < n_layer;
    const int device = placement.TensorDevice(t.name, in_layer ? c.layer : -1, n_layer, c.role);
    if (device >= 0) {
      if (r.device_weight_bytes.size() <= static_cast<size_t>(device))
        r.device_weight_bytes.resize(static_cast<size_t>(device) + 1, 0.0);
      r.device_weight_bytes[static_cast<size_t>(device)] += bytes;
    }
    (device >= 0 ? r.gpu_weight_bytes : r.host_weight_bytes) += bytes;
    if (!in_layer) continue;
    const auto li = static_cast<size_t>(c.layer);
    if (c.role == TensorRole::kRoutedExperts) {
      if (device >= 0) {
        expert_gpu[li] += bytes;
        r.layers[li].expert_device = device;
      }
    } else {
      dense_all[li] += bytes;
      if (device >= 0) dense_gpu[li] += bytes;
    }
  }
  for (size_t i = 0; i < r.layers.size(); ++i) {
    LayerResidency& lr = r.layers[i];
    lr.device = placement.LayerDevice(static_cast<int>(i), n_layer);
    lr.layer_on_gpu = lr.device != kHostDevice;
    if (lr.expert_device == kHostDevice) lr.expert_device = lr.device;
    const double e = shape.layers[i].experts.bytes;
    lr.expert_gpu_fraction = e > 0 ? expert_gpu[i] / e : (lr.layer_on_gpu ? 1.0 : 0.0);
    lr.dense_gpu_fraction = dense_all[i] > 0 ? dense_gpu[i] / dense_all[i] : 0.0;
  }
  return r;
}

Result<Residency> ResolveResidency(const ModelInfo& m, const ModelShape& shape, int n_gpu_layers,
                                   int n_cpu_moe, const std::string& override_tensor,
                                   bool has_accelerator) {
  ServerConfig config;
  config.placement.n_gpu_layers = n_gpu_layers;
  config.placement.n_cpu_moe = n_cpu_moe;
  MOETUNE_TRY(config.placement.SetOverrideTensor(override_tensor));
  MOETUNE_ASSIGN_OR_RETURN(const WeightPlacement placement,
                           WeightPlacementOf(config, has_accelerator));
  return ResolveResidency(m, shape, placement);
}

}  // namespace moetune
