#pragma once
/// What the speed model needs to know about a model: per layer, the bytes and
/// parameters of each role (from the tensor list), the attention geometry, and
/// where each tensor lives for a placement (`-ngl`, `--n-cpu-moe`, `-ot`).
///
/// Where each tensor lives is the memory map's own answer
/// (model/weight_placement.h, the rules of llama.cpp's load_tensors), so the
/// speed model and the plan can never place a weight differently.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_info.h"
#include "model/weight_placement.h"
#include "util/result.h"

namespace moetune {

/// Bytes and parameters of one group of tensors.
struct WeightGroup {
  double bytes = 0;
  double params = 0;
  WeightGroup& operator+=(const WeightGroup& o) {
    bytes += o.bytes;
    params += o.params;
    return *this;
  }
};

/// One layer of the model, as far as speed goes.
struct LayerShape {
  int index = 0;
  AttentionKind attention = AttentionKind::kFull;
  bool has_kv = true;
  uint32_t window = 0;  // sliding window / chunk (capped layers)
  uint32_t n_head = 0;
  uint32_t n_embd_k_gqa = 0;  // K values per cached token
  uint32_t n_embd_v_gqa = 0;
  uint32_t head_dim = 0;   // per query head (attention FLOPs)
  WeightGroup dense;       // attention, norms, router, dense FFN, recurrent projections
  WeightGroup shared;      // shared experts (read every token)
  WeightGroup experts;     // routed experts (k of n read per token)
  double state_bytes = 0;  // recurrent state per sequence
};

struct ModelShape {
  std::string name;
  std::vector<LayerShape> layers;
  WeightGroup output;  // LM head + output norm (token_embd when tied)
  WeightGroup token_embd;
  int n_expert = 0;
  int n_expert_used = 0;
  int n_embd = 0;
  int n_vocab = 0;
  double total_bytes = 0;
  double total_params = 0;
  int64_t biggest_expert_layer = 0;  // bytes

  /// Fraction of routed experts read per token (k / n).
  double ExpertFraction() const {
    return n_expert > 0 ? static_cast<double>(n_expert_used) / n_expert : 1.0;
  }
  /// Expected fraction of a layer's experts that a micro-batch of `tokens`
  /// routes to at least once: 1 - (1 - k/n)^tokens (uniform routing).
  double ExpertsTouched(int tokens) const;
};

/// Builds the shape from an opened model.
ModelShape BuildModelShape(const ModelInfo& model);

/// Where each layer's weights live for one placement.
struct LayerResidency {
  bool layer_on_gpu = false;        // attention, norms, router, dense FFN, shared experts, KV
  int device = kHostDevice;         // the device of those (kHostDevice: the CPU)
  int expert_device = kHostDevice;  // the device of its routed experts kept off the CPU
  double expert_gpu_fraction = 0;   // share of the routed-expert bytes on the GPU
  double dense_gpu_fraction = 0;    // share of the non-expert bytes on the GPU (-ot can split)
};

struct Residency {
  std::vector<LayerResidency> layers;
  bool output_on_gpu = false;
  int output_device = kHostDevice;
  std::vector<double> device_weight_bytes;  // weights on each device, in the placement's order
  double gpu_weight_bytes = 0;              // weights in GPU buffers
  double host_weight_bytes = 0;             // weights in host buffers (token_embd included)
};

/// Resolves a placement over its devices.
Result<Residency> ResolveResidency(const ModelInfo& model, const ModelShape& shape,
                                   const WeightPlacement& placement);

/// The same for one device ("CUDA0") or none. `override_tensor` is llama.cpp's
/// -ot value ("pattern=BUFT[,pattern=BUFT...]"). kInvalidArgument for a
/// malformed rule (the message names it).
Result<Residency> ResolveResidency(const ModelInfo& model, const ModelShape& shape,
                                   int n_gpu_layers, int n_cpu_moe,
                                   const std::string& override_tensor, bool has_accelerator);

}  // namespace moetune
