#pragma once
/// Placement planning: for a GPU with a given amount of free memory, which
/// `-ngl 99 --n-cpu-moe N` fits with a safety margin, what every N costs on
/// each device, and (optionally) a finer fill of the remaining VRAM with `-ot`
/// overrides of single expert tensors. Dense models get an `-ngl` plan.
///
/// Device model (llama.cpp, src/llama-model.cpp load_tensors and
/// src/llama-context.cpp): token_embd always stays in host memory (the input
/// layer is on the CPU); with -ngl >= n_layer+1 every layer and the output head
/// go to the GPU; --n-cpu-moe N overrides the routed experts of layers 0..N-1
/// to host memory; the KV cache and recurrent state follow their layer (-kvo
/// default on). Compute buffers are estimated (model/memory_map.h).

#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/memory_map.h"

namespace moetune {

struct DeviceBreakdown {
  RoleBytes weights{};
  int64_t kv = 0;
  int64_t state = 0;
  int64_t compute = 0;
  int64_t weights_total() const { return Sum(weights); }
  int64_t total() const { return weights_total() + kv + state + compute; }
};

/// One candidate placement: `-ngl <ngl> --n-cpu-moe <n_cpu_moe>`.
struct PlacementOption {
  int n_cpu_moe = 0;
  int ngl = 0;
  DeviceBreakdown gpu;
  DeviceBreakdown host;
  bool fits = false;     // gpu.total() + margin <= budget
  int64_t headroom = 0;  // budget - margin - gpu.total() (negative = overflow)
};

struct PlanRequest {
  int64_t vram_free = 0;           // bytes the GPU has free for this model (before --reserve)
  int64_t reserve = 0;             // bytes other programs hold or will hold
  int64_t margin = 1024ll << 20;   // llama.cpp --fit's default target margin (-fitt 1024 MiB)
  int64_t host_ram_available = 0;  // 0 = unknown
  ContextParams ctx;
  bool fine_fill = true;  // propose -ot overrides for single expert tensors
};

/// An extra `-ot REGEX=CPU` that keeps part of one layer's experts in host
/// memory so that the rest of that layer fits on the GPU.
struct TensorOverride {
  std::string pattern;  // regex as llama.cpp takes it
  std::string buffer;   // "CPU"
  int64_t bytes_on_gpu_gained = 0;
};

struct Plan {
  bool moe = false;
  int n_layer = 0;
  int64_t budget = 0;  // vram_free - reserve
  int64_t margin = 0;
  std::vector<PlacementOption> options;   // MoE: N = 0..n_layer; dense: ngl = 0..n_layer+1
  std::optional<size_t> recommended;      // index into options; nullopt = nothing fits
  std::vector<TensorOverride> fine_fill;  // applied on top of the recommended option, N-1
  int fine_fill_n_cpu_moe = -1;           // the N to use with fine_fill
  int64_t host_ram_needed = 0;
  bool host_ram_fits = true;
  std::vector<std::string> notes;

  const PlacementOption* best() const { return recommended ? &options[*recommended] : nullptr; }
};

/// Plans placements for a model. `tensors` is the model's tensor list, used for
/// the per-tensor fine fill.
Plan PlanPlacement(const GgufModel& model, const ModelArch& arch, const WeightMap& weights,
                   const PlanRequest& request);

/// The exact llama-server command for a placement (argument vector; quote
/// with ShellQuote for display).
std::vector<std::string> ServerArgs(const std::string& model_path, const Plan& plan,
                                    const PlanRequest& request);

/// POSIX-shell quoting of an argument vector for display.
std::string ShellJoin(const std::vector<std::string>& args);

}  // namespace moetune
