#pragma once
/// Placement planning: for a GPU with a given amount of free memory, which
/// `-ngl 99 --n-cpu-moe N` fits with a safety margin, what every N costs on
/// each device, and (optionally) a finer fill of the remaining VRAM with `-ot`
/// overrides of single expert tensors. Dense models get an `-ngl` plan.
///
/// Every option is evaluated for its exact weight placement
/// (model/weight_placement.h): weights and KV cache per device from the
/// model's tensors, compute buffers from llama.cpp's reserve graph scheduled
/// over the GPU and the CPU (model/compute_buffers.h). The recommendation is
/// one configuration (a ServerConfig, config/server_config.h) that the table
/// row, the JSON, the text and the printed command all describe.
///
/// Cost: linear in the number of layers per option (prefix sums over layers);
/// compute buffers are simulated once per distinct placement, and for models
/// deeper than 256 layers once per bucket of placements (docs/memory.md).

#include <optional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/compute_buffers.h"
#include "model/memory_map.h"
#include "plan/launch.h"
#include "util/result.h"

namespace moetune {

struct DeviceBreakdown {
  RoleBytes weights{};
  int64_t kv = 0;
  int64_t state = 0;
  int64_t compute = 0;
  int64_t weights_total() const { return Sum(weights); }
  int64_t total() const { return weights_total() + kv + state + compute; }
};

/// One candidate placement with its cost on each device.
struct PlacementOption {
  WeightPlacement placement;
  int n_cpu_moe = 0;
  int ngl = 0;
  DeviceBreakdown gpu;                   // every device together
  std::vector<DeviceBreakdown> devices;  // each device, in device order
  DeviceBreakdown host;
  bool fits = false;     // gpu.total() + margin <= budget
  int64_t headroom = 0;  // budget - margin - gpu.total() (negative = overflow)
};

/// One device of a plan across several devices: its engine name and memory.
struct DeviceBudget {
  std::string name;  // "CUDA0", "CUDA1", "RPC0"
  int64_t free = 0;  // bytes free for llama.cpp (total less what other programs hold)
  int64_t reserve = 0;
  DeviceKind kind = DeviceKind::kCuda;
  int64_t budget() const { return free - reserve; }
};

/// One device's part of a plan across devices.
struct DeviceShare {
  DeviceBudget device;
  int layers = 0;                      // repeating layers on it (the last device: + the output)
  std::vector<int> cpu_expert_layers;  // its layers whose routed experts stay in host memory
  DeviceBreakdown use;
  int64_t headroom = 0;  // budget - margin - use (negative = overflow)
};

struct PlanRequest {
  std::string model_path;          // -m of the planned command (CommandModelPath)
  int64_t vram_free = 0;           // bytes the GPU has free (before --reserve); 0: no GPU
  int64_t reserve = 0;             // bytes kept free beyond what others hold (--reserve)
  int64_t margin = 1024ll << 20;   // llama.cpp --fit's default target margin (-fitt 1024 MiB)
  int64_t host_ram_available = 0;  // 0 = unknown
  ContextParams ctx;
  bool fine_fill = true;  // propose -ot overrides for single expert tensors
  /// How each device treats host-resident weights (one kind: every device).
  std::vector<DeviceKind> device_kinds = {DeviceKind::kCuda};
  /// Several devices (plan/device_split.h): each one's memory, in the
  /// engine's order; vram_free and reserve then only describe the sum.
  std::vector<DeviceBudget> devices;

  /// Plans for `budgets` (in the engine's order): several are `devices`, one
  /// is the GPU; vram_free, reserve and device_kinds follow them.
  void SetDevices(const std::vector<DeviceBudget>& budgets);
};

struct Plan {
  bool moe = false;
  int n_layer = 0;
  int64_t budget = 0;  // vram_free - reserve
  int64_t margin = 0;
  ContextLayout layout;
  std::vector<PlacementOption> options;  // MoE: N = 0..n_layer; dense: ngl = 0..n_layer+1
  std::optional<size_t>
      smallest_fitting;  // index into options (MoE: smallest N; dense: most layers)
  /// The recommendation: the smallest fitting option, or its fine fill (N-1
  /// plus an -ot override) when that puts more on the GPU. nullopt = nothing fits.
  std::optional<PlacementOption> chosen;
  std::optional<ServerConfig> config;  // the configuration of the printed command
  int64_t gpu_bytes_gained = 0;        // by the fine fill, over options[*smallest_fitting]
  int64_t shortfall = 0;               // nothing fits: bytes missing for the least demanding option
  int64_t host_ram_needed = 0;
  bool host_ram_fits = true;
  int compute_simulations = 0;  // distinct compute-buffer simulations run (bounded for deep models)
  /// Several devices: each device's part of the chosen placement (empty: one device).
  std::vector<DeviceShare> shares;
  /// No GPU (no free VRAM: --vram 0, or a machine without one): nothing to
  /// fit; the one option keeps every layer on the host (-ngl 0, no --n-cpu-moe).
  bool host_only = false;
  std::vector<std::string> notes;

  const PlacementOption* best() const { return chosen ? &*chosen : nullptr; }
  bool fine_filled() const { return chosen && chosen->placement.override_layer >= 0; }
};

/// Plans placements for a model, for llama-server (compute buffers reserved
/// for one output per sequence, as llama-server does). Without a GPU
/// (request.vram_free 0) the plan is host-only: every layer on the CPU. Errors: an invalid
/// context, or sizes that overflow (absurd headers or contexts).
Result<Plan> PlanPlacement(const GgufModel& model, const ModelArch& arch, const WeightMap& weights,
                           const PlanRequest& request);

/// The memory map of one server configuration (its placement, context,
/// micro-batch, KV types and flash attention) for llama-server, with its fit
/// and headroom against `request`'s budget and margin (request.ctx is not
/// used: the configuration's own context is). Errors: a placement the memory
/// map cannot express (config/server_config.h WeightPlacementOf), an invalid
/// context.
Result<PlacementOption> PlanServerConfig(const GgufModel& model, const ModelArch& arch,
                                         const WeightMap& weights, const PlanRequest& request,
                                         const ServerConfig& config);

/// Weights, KV cache, recurrent state and compute buffers of one placement, on
/// each device and on the host (exposed for plan --check and tests). `kinds`:
/// one per device (one kind: every device).
Result<PlacementOption> EvaluatePlacement(const GgufModel& model, const ModelArch& arch,
                                          const WeightMap& weights, const ContextParams& ctx,
                                          const WeightPlacement& placement,
                                          const std::vector<DeviceKind>& kinds);

}  // namespace moetune
