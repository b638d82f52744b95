#include "speed/model_shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>

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

namespace {

struct Override {
  std::regex re;
  bool host = false;
};

Result<std::vector<Override>> ParseOverrides(const std::string& text) {
  std::vector<Override> out;
  if (text.empty()) return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("-ot item '{}' is not PATTERN=BUFFER_TYPE", item));
    }
    Override o;
    try {
      o.re = std::regex(item.substr(0, eq));
    } catch (const std::regex_error& e) {
      return Error(
          ErrorKind::kInvalidArgument,
          fmt::format("-ot pattern '{}' is not a valid regex: {}", item.substr(0, eq), e.what()));
    }
    const std::string buft = item.substr(eq + 1);
    o.host = buft.rfind("CPU", 0) == 0;  // CPU, CPU_REPACK, CPU_Mapped ...
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace

Result<Residency> ResolveResidency(const ModelInfo& m, const ModelShape& shape, int n_gpu_layers,
                                   int n_cpu_moe, const std::string& override_tensor,
                                   bool has_accelerator) {
  Residency r;
  const int n_layer = static_cast<int>(shape.layers.size());
  r.layers.resize(shape.layers.size());
  if (!has_accelerator) n_gpu_layers = 0;
  if (n_gpu_layers < 0) n_gpu_layers = n_layer + 1;  // -1: llama.cpp's default, every layer
  const int ngl = std::max(0, n_gpu_layers);
  const int first_gpu = std::max(0, n_layer - ngl);
  r.output_on_gpu = ngl > n_layer;
  MOETUNE_ASSIGN_OR_RETURN(auto overrides, ParseOverrides(override_tensor));
  std::vector<double> expert_gpu(shape.layers.size(), 0), dense_gpu(shape.layers.size(), 0);
  std::vector<double> dense_all(shape.layers.size(), 0);
  for (size_t i = 0; i < m.gguf.tensors.size(); ++i) {
    const TensorInfo& t = m.gguf.tensors[i];
    const TensorClass& c = m.arch.tensors[i];
    const double bytes = static_cast<double>(t.n_bytes);
    bool gpu = false;
    if (c.layer >= 0 && c.layer < n_layer) {
      gpu = c.layer >= first_gpu;
      if (c.role == TensorRole::kRoutedExperts && c.layer < n_cpu_moe) gpu = false;
    } else {
      gpu = r.output_on_gpu && c.role != TensorRole::kTokenEmbedding;
    }
    if (has_accelerator) {
      for (const auto& o : overrides) {
        if (std::regex_search(t.name, o.re)) {
          gpu = !o.host;
          break;
        }
      }
    }
    (gpu ? r.gpu_weight_bytes : r.host_weight_bytes) += bytes;
    if (c.layer < 0 || c.layer >= n_layer) continue;
    const auto li = static_cast<size_t>(c.layer);
    if (c.role == TensorRole::kRoutedExperts) {
      if (gpu) expert_gpu[li] += bytes;
    } else {
      dense_all[li] += bytes;
      if (gpu) dense_gpu[li] += bytes;
    }
  }
  for (size_t i = 0; i < r.layers.size(); ++i) {
    LayerResidency& lr = r.layers[i];
    lr.layer_on_gpu = static_cast<int>(i) >= first_gpu && has_accelerator;
    const double e = shape.layers[i].experts.bytes;
    lr.expert_gpu_fraction = e > 0 ? expert_gpu[i] / e : (lr.layer_on_gpu ? 1.0 : 0.0);
    lr.dense_gpu_fraction = dense_all[i] > 0 ? dense_gpu[i] / dense_all[i] : 0.0;
  }
  return r;
}

}  // namespace moetune
