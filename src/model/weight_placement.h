#pragma once
/// Where llama.cpp keeps each weight for `-ngl N [--n-cpu-moe M] [-ot ...]`
/// (src/llama-model.cpp load_tensors). The installed engine counts the output
/// layer first: -ngl 1 offloads only the output head and its norm, -ngl N the
/// output and the last N-1 repeating layers, -ngl n_layer+1 (or 99) all of
/// them (llama-fit-params --rpc: "offloaded 1/17 layers" puts 205 MiB of
/// output head on RPC0 for a 16-layer model). token_embd always stays in host
/// memory (the input layer runs on the CPU); --n-cpu-moe M overrides
/// the routed experts of layers 0..M-1 to host memory (common/arg.cpp, regex
/// blk\.<i>\.ffn_(up|down|gate|gate_up)_(ch|)exps); the fine fill's
/// `-ot blk\.L\.(kind|...)=CPU` moves only some expert tensors of layer L.

#include <string>
#include <string_view>
#include <vector>

#include "model/arch.h"

namespace moetune {

struct WeightPlacement {
  bool has_device = false;  // a device (GPU or RPC) besides the CPU
  int n_gpu_layers = 0;     // -ngl
  int n_cpu_moe = 0;        // --n-cpu-moe
  int override_layer = -1;  // -ot fine fill: layer whose listed expert tensors stay on the CPU
  std::vector<std::string> override_kinds;  // "ffn_up_exps", "ffn_gate_exps", ...

  /// Layer `il`'s own weights (attention, norms, router, dense and shared FFN) and its
  /// KV cache are on the device.
  bool LayerOnDevice(int il, int n_layer) const;
  /// The output head and output norm are on the device.
  bool OutputOnDevice(int n_layer) const {
    (void)n_layer;
    return has_device && n_gpu_layers >= 1;
  }
  /// A tensor of layer `il` with role `role` and base name `kind` ("ffn_up_exps").
  bool OnDevice(int il, int n_layer, TensorRole role, std::string_view kind) const;
};

/// "ffn_up_exps" for "blk.3.ffn_up_exps.weight"; "" for names outside blk.N.
std::string TensorKind(std::string_view name);

}  // namespace moetune
