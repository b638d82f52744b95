#pragma once
/// The one typed configuration of a llama.cpp server: everything a command
/// that moetune prints, emits, starts or measures says. `plan`, `tune`,
/// `serve`, `watch`, `--emit` and the reports all hold a ServerConfig; its
/// argv is written by one function (config/server_argv.h) from one flag
/// vocabulary (config/flags.h), and a measurement (engine/run_config.h
/// RunConfig) is a ServerConfig plus the shape of the test.
///
/// Values that llama.cpp itself treats as "not given" mark a flag that is not
/// written: -ngl -1 (auto), -c 0 (the model's training context), -np -1
/// (auto), -t 0 (this build: the engine's default). The KV cache types are
/// ggml type ids (gguf/ggml_type.h), f16 (llama.cpp's default) not written.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/tensor_override.h"
#include "gguf/ggml_type.h"
#include "model/memory_map.h"
#include "model/weight_placement.h"
#include "util/result.h"

namespace moetune {

/// `-fa`: flash attention.
enum class FlashAttn {
  kDefault,  // not given: the engine's default (auto in current builds)
  kOn,
  kOff,
  kAuto,
};

/// `-lm`: how the weights are loaded (llama-bench and llama-server --help).
enum class LoadMode {
  kDefault,  // not given (auto)
  kAuto,
  kNone,  // read into memory, no mmap (what --no-mmap was)
  kMmap,
  kMlock,
  kMmapMlock,
  kDio,
};

/// A flag that can be set, unset or left to the engine (-kvu / -no-kvu, -fit on/off).
enum class Switch { kDefault, kOn, kOff };

/// Which end of the layers the routed experts kept in host memory come from.
enum class CpuExpertsFrom {
  kFirst,  // layers 0..N-1: llama.cpp's --n-cpu-moe N
  kLast,   // the last N layers, as llama.cpp's automatic fit fills them (written as -ot)
  /// Across devices (`devices` set): the first layers of each device's range,
  /// N shared out in proportion to the layers each holds (PerDeviceCpuLayers;
  /// written as -ot), so that no device is left with all of its experts.
  kPerDevice,
};

/// The fine fill: some expert tensors of one layer stay in host memory
/// (`-ot blk\.L\.(ffn_up_exps|ffn_gate_exps)=CPU`).
struct ExpertTensorsOnCpu {
  int layer = 0;
  std::vector<std::string> kinds;  // "ffn_up_exps", "ffn_gate_exps", ...
  bool operator==(const ExpertTensorsOnCpu&) const = default;
};

/// One device's share of a placement across devices (filled by multi-device
/// planning; empty for one device).
struct DevicePlacement {
  std::string device;  // the engine's name: "CUDA0", "Vulkan1", "RPC[host:port]"
  int layers = 0;      // repeating layers on this device (-ts as layer counts)
  bool operator==(const DevicePlacement&) const = default;
};

/// Where the weights go: -ngl, the routed experts kept in host memory, the
/// fine fill and any other -ot rules, and (later) the split across devices.
struct Placement {
  int n_gpu_layers = 99;  // -ngl; -1: not given (llama.cpp's auto)
  /// Layers whose routed experts stay in host memory; -1: no --n-cpu-moe
  /// written (dense models, or a command without it).
  int n_cpu_moe = 0;
  CpuExpertsFrom cpu_experts = CpuExpertsFrom::kFirst;
  bool all_cpu_moe = false;  // --cpu-moe: every layer's experts (n_cpu_moe then -1)
  /// The model's repeating layers; needed only to write CpuExpertsFrom::kLast
  /// and kPerDevice.
  int n_layer = 0;
  std::vector<ExpertTensorsOnCpu> fine_fill;  // written as -ot, before `overrides`
  std::vector<OverrideRule> overrides;        // other -ot rules, as given
  std::vector<DevicePlacement> devices;       // empty: one device

  /// Every -ot rule in writing order: the last-N experts (kLast), the fine
  /// fill, then `overrides`.
  std::vector<OverrideRule> Rules() const;
  /// The rules as one -ot value (llama-server's form, rules joined by ','); "" when none.
  std::string OverrideTensor() const;
  /// Adds the rules of an -ot value ("pattern=BUFT[,...]"): rules in the fine
  /// fill's own form (OverrideValue), before any other, become `fine_fill`,
  /// the rest `overrides`. Errors name the rule that does not parse.
  Status AddOverrideTensor(std::string_view value);
  /// Replaces the fine fill and the other rules with those of `value` ("" = none).
  Status SetOverrideTensor(std::string_view value);
  /// The --n-cpu-moe value written (-1 when none: kLast and dense placements).
  int WrittenNCpuMoe() const;
  /// The -dev list in its order ("CUDA1", "CUDA0"); empty for one device.
  std::vector<std::string> DeviceNames() const;
  bool operator==(const Placement&) const = default;
};

/// One llama-server configuration.
struct ServerConfig {
  std::string model;  // -m (the first file of a split model; llama.cpp finds the others)
  Placement placement;
  int64_t ctx_size = 0;  // -c; 0: not given (the model's training context)
  int n_parallel = -1;   // -np; -1: not given (llama-server: auto, 4 slots, one cache); never 0
  Switch kv_unified = Switch::kDefault;  // -kvu / -no-kvu
  int n_ubatch = 512;                    // -ub
  int n_batch = 2048;                    // -b
  FlashAttn flash_attn = FlashAttn::kDefault;
  uint32_t type_k = ggml_type::kF16;  // -ctk
  uint32_t type_v = ggml_type::kF16;  // -ctv
  int threads = 0;                    // -t; 0: not given (-1: llama.cpp's default, as given)
  LoadMode load_mode = LoadMode::kDefault;
  Switch fit = Switch::kDefault;  // -fit on|off (moetune's commands: off, the plan is exact)
  std::vector<std::string> rpc;   // --rpc HOST:PORT,... (RPC devices join)
  // Where a started server listens (serve); not part of a planned configuration.
  std::string host;      // --host; "" not given
  int port = 0;          // --port; 0 not given
  bool metrics = false;  // --metrics

  bool operator==(const ServerConfig&) const = default;
};

/// "on", "off", "auto"; "" for kDefault.
const char* FlashAttnName(FlashAttn fa);
/// Every spelling llama.cpp accepts: on/enabled/true/1, off/disabled/false/0,
/// auto/-1 (common_arg_utils::is_truthy/is_falsey/is_autoy, common/arg.cpp);
/// "" is kDefault. Anything else is kInvalidArgument.
Result<FlashAttn> ParseFlashAttn(std::string_view value);

/// "auto", "none", "mmap", "mlock", "mmap+mlock", "dio"; "" for kDefault.
const char* LoadModeName(LoadMode mode);
/// The names above ("" is kDefault); anything else is kInvalidArgument.
Result<LoadMode> ParseLoadMode(std::string_view value);

/// "on", "off"; "" for kDefault.
const char* SwitchName(Switch s);

/// The `-ot` value that keeps the listed expert tensors of `layer` on the CPU:
/// `blk\.L\.(ffn_up_exps|ffn_gate_exps)=CPU` (a regex, substring match).
std::string OverrideValue(int layer, const std::vector<std::string>& kinds);

/// The layers whose routed experts CpuExpertsFrom::kPerDevice keeps in host
/// memory: `n` shared out over the devices' ranges of `n_layer` layers in
/// proportion to their sizes (largest remainder, ties to the earlier device),
/// the first layers of each range. The last device's -ts count includes the
/// output head (slot n_layer), so its range is what is left of the layers.
std::vector<int> PerDeviceCpuLayers(const std::vector<DevicePlacement>& devices, int n_layer,
                                    int n);

/// The -ot rule that keeps the routed experts of whole `layers` in host memory:
/// `blk\.(20|21|22)\.ffn_(up|down|gate|gate_up)_(ch|)exps` on CPU (the tensors
/// llama.cpp's --n-cpu-moe names, common/arg.cpp llm_ffn_exps_block_regex). The
/// last-N placement and tune's statement of llama.cpp's automatic fit
/// (tune/space.h LlamaDefaults) write it; CpuExpertsOf reads it back.
OverrideRule ExpertLayersRule(const std::vector<int>& layers);

/// Which layers' routed experts a placement keeps in host memory, read from its
/// typed fields and from -ot rules in ExpertLayersRule's form.
struct CpuExperts {
  bool all = false;                  // --cpu-moe: every layer's experts
  std::vector<int> layers;           // whole layers, ascending, without repeats
  bool from_ot = false;              // some of `layers` come from -ot rules
  std::vector<int> partial;          // layers with some expert tensors on the CPU (fine fill)
  std::vector<OverrideRule> unread;  // other -ot rules (what they place is not read)
};
CpuExperts CpuExpertsOf(const Placement& placement);

/// The context settings of `config` that size llama.cpp's memory. The
/// engine's defaults stand for what is not given: -np auto is 4 slots sharing
/// one cache, -fa auto or not given is on (llama.cpp enables it on the CPU and
/// CUDA backends), -c 0 is `model_ctx` (the model's training context; 4096 when 0).
ContextParams ContextOf(const ServerConfig& config, ReserveOutputs reserve, int64_t model_ctx = 0);

/// The order in which llama.cpp's model uses the devices named `devices`
/// (the engine's listing order) when no -dev is given: the RPC devices first,
/// then the others, each group in listing order (llama.cpp's model loader,
/// src/llama.cpp, "add RPC servers at the front of the list to minimize
/// network transfers"). Indices into `devices`; the last one holds the output
/// head.
std::vector<size_t> DefaultDeviceOrder(const std::vector<std::string>& devices);

/// The exact weight placement of `config` (model/weight_placement.h) over the
/// engine's devices (`devices`: their names in the engine's order, "CUDA0",
/// "RPC0"; empty: the CPU only). A -dev list in the configuration picks and
/// orders them and its -ts splits the layers; without one the devices are
/// used in DefaultDeviceOrder and the layers split as llama.cpp does, by
/// `free` (each device's free memory; equal shares when unknown). Every -ot rule is placed: buffer
/// CPU or a host buffer ("CUDA0_Host") is host memory, a device's name that device.
/// kInvalidArgument for a rule naming no device of the placement, or a
/// pattern that is not a regular expression.
Result<WeightPlacement> WeightPlacementOf(const ServerConfig& config,
                                          const std::vector<std::string>& devices,
                                          const std::vector<int64_t>& free = {});
/// The same for one GPU ("CUDA0", `has_device`) or none.
Result<WeightPlacement> WeightPlacementOf(const ServerConfig& config, bool has_device);

/// A ServerConfig for a plan: -ngl, --n-cpu-moe (MoE models only) and the
/// fine fill from `placement`, the context from `ctx` (-kvu only when it
/// changes anything: more than one sequence), `-fit off` (the plan is exact).
ServerConfig PlannedConfig(const std::string& model, const WeightPlacement& placement,
                           const ContextParams& ctx, bool moe);

}  // namespace moetune
