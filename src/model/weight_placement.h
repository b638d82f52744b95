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
///
/// Several devices (-dev A,B -ts a,b; llama-model.cpp load_tensors): the
/// layer slots from i_gpu_start = n_layer + 1 - ngl on (the output head is
/// slot n_layer) are cut in proportion to -ts, or to each device's free memory
/// when -ts is not given: slot `il` goes to the first device whose cumulative
/// share exceeds (il - i_gpu_start) / act_gpu_layers, in float arithmetic. So
/// `-ts 3,6` on 8 layers puts layers 0-2 on the first device and layers 3-7
/// with the output on the second (llama-fit-params over two RPC devices). Any
/// other -ot rule (a pattern searched in the tensor name, first match wins,
/// after --n-cpu-moe's own rules) sends matching tensors to its buffer: host
/// memory or a named device.

#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch.h"
#include "util/result.h"

namespace moetune {

/// An -ot rule as the memory map applies it: tensors whose name `pattern`
/// finds (ECMAScript, searched) go to `device` (an index into the devices;
/// kHostDevice: host memory).
struct TensorRule {
  std::string pattern;
  int device = -1;
};

/// The index that stands for host memory in WeightPlacement's answers.
inline constexpr int kHostDevice = -1;

struct WeightPlacement {
  bool has_device = false;  // a device (GPU or RPC) besides the CPU
  int n_gpu_layers = 0;     // -ngl
  int n_cpu_moe = 0;        // --n-cpu-moe (the first layers' routed experts)
  int n_cpu_moe_last = 0;   // the last layers' routed experts in host memory (llama.cpp's fit)
  int override_layer = -1;  // -ot fine fill: layer whose listed expert tensors stay on the CPU
  std::vector<std::string> override_kinds;  // "ffn_up_exps", "ffn_gate_exps", ...
  /// Several devices: llama.cpp's tensor_split, one share per device in
  /// device order (-ts; moetune writes layer counts); empty: one device.
  std::vector<float> split;

  /// Sets the other -ot rules (after --n-cpu-moe's and the fine fill's).
  /// Errors name a pattern that is not a valid regex or a device out of range.
  Status SetRules(std::vector<TensorRule> rules);
  const std::vector<TensorRule>& rules() const { return rules_; }

  /// Devices besides the CPU (0 without one).
  int DeviceCount() const;
  /// The command carries tensor overrides (--n-cpu-moe N > 0, --cpu-moe,
  /// llama.cpp's fit of the last layers' experts, the fine fill's -ot, any
  /// other -ot rule): llama.cpp's has_tensor_overrides().
  bool HasTensorOverrides() const;
  /// The device of layer `il`'s own weights (attention, norms, router, dense and
  /// shared FFN) and its KV cache; kHostDevice when on the CPU. `il` = n_layer:
  /// the output head.
  int LayerDevice(int il, int n_layer) const;
  /// The device of the output head and output norm.
  int OutputDevice(int n_layer) const { return LayerDevice(n_layer, n_layer); }
  /// The device of tensor `name` of layer `il` (-1 for tensors outside blk.N),
  /// with role `role`: the -ot rules first, then the layer's device.
  int TensorDevice(std::string_view name, int il, int n_layer, TensorRole role) const;

  /// Layer `il`'s own weights and KV cache are on a device.
  bool LayerOnDevice(int il, int n_layer) const { return LayerDevice(il, n_layer) >= 0; }
  /// The output head and output norm are on a device.
  bool OutputOnDevice(int n_layer) const { return OutputDevice(n_layer) >= 0; }
  /// A tensor of layer `il` with role `role` and base name `kind` ("ffn_up_exps"),
  /// for placements without other -ot rules (their patterns need the full name).
  bool OnDevice(int il, int n_layer, TensorRole role, std::string_view kind) const;

 private:
  // The routed experts of layer `il` kept in host memory by --n-cpu-moe, the
  // last-layers rule or the fine fill.
  bool ExpertsOnHost(int il, int n_layer, std::string_view kind) const;

  // The first rule matching `name` (rules_.size(): none), remembered per name.
  size_t MatchingRule(std::string_view name) const;

  std::vector<TensorRule> rules_;
  // The compiled patterns of rules_ (shared: a placement is copied often).
  std::shared_ptr<const std::vector<std::regex>> compiled_;
  // Which rule each tensor name matched, shared by the copies of one set of
  // rules: std::regex is slow, and every memory map and compute graph asks
  // again for the same few hundred names.
  struct RuleMemo;
  std::shared_ptr<RuleMemo> memo_;
};

/// "ffn_up_exps" for "blk.3.ffn_up_exps.weight"; "" for names outside blk.N.
std::string TensorKind(std::string_view name);

}  // namespace moetune
