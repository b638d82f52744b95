#pragma once
/// Doctor's verdicts: findings about the machine with the fix for each, ordered
/// by impact. With a model and a context they become concrete ("closing them
/// frees room for 3 more expert layers").
///
/// The model side comes in as ModelNeeds, a small struct the caller fills from
/// the memory map (model/memory_map.h), so this file knows nothing about GGUF.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine_traps.h"
#include "hw/machine_profile.h"
#include "hw/platform.h"

namespace moetune {

/// What a model needs at a context length, for `-ngl 99 --n-cpu-moe N`.
struct ModelNeeds {
  std::string name;
  int64_t n_ctx = 0;
  /// Routed-expert bytes of each layer in layer order (0 for dense layers):
  /// what --n-cpu-moe moves to host RAM, layers 0..N-1 first.
  std::vector<int64_t> expert_bytes_by_layer;
  /// What must sit in VRAM whatever N is: non-expert weights of the offloaded
  /// layers (+ output head), KV cache / recurrent state at n_ctx, compute buffers.
  int64_t gpu_fixed_bytes = 0;
  /// What stays in host RAM whatever N is (token embeddings and the like).
  int64_t host_fixed_bytes = 0;
};

/// The split that fits a VRAM budget.
struct ExpertFit {
  int moe_layers = 0;         // layers that have routed experts
  int gpu_expert_layers = 0;  // of those, how many keep their experts on the GPU
  int n_cpu_moe = 0;          // the --n-cpu-moe value (layers 0..n_cpu_moe-1 on CPU)
  int64_t gpu_bytes = 0;      // fixed + experts on GPU
  int64_t cpu_expert_bytes = 0;
  bool fixed_part_fits = true;  // false: even with every expert on the CPU it overflows
};

/// The smallest --n-cpu-moe whose GPU part fits in `vram_budget_bytes`.
ExpertFit FitExperts(const ModelNeeds& model, int64_t vram_budget_bytes);

struct Verdict {
  std::string id;        // stable key for scripts
  int impact = 0;        // 0..100; verdicts are sorted by it, highest first
  std::string severity;  // "critical" (>= 80), "warning" (>= 40), "info"
  std::string title;
  std::string detail;
  std::string fix;
};

/// A verdict with its severity derived from its impact (clamped to 0..100).
Verdict MakeVerdict(std::string id, int impact, std::string title, std::string detail,
                    std::string fix);

struct VerdictInputs {
  MachineProfile profile;
  std::vector<EngineTrap> traps;
  std::optional<ModelNeeds> model;
  /// Headroom kept free on every GPU, as llama.cpp's --fit-target (1024 MiB).
  int64_t vram_margin_bytes = int64_t{1024} << 20;
  /// The platform (WSL, a Windows engine, a GPU sharing RAM); nullopt: not detected.
  std::optional<Platform> platform = std::nullopt;
};

/// All verdicts, highest impact first.
std::vector<Verdict> MakeVerdicts(const VerdictInputs& in);

}  // namespace moetune
