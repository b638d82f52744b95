#pragma once
/// Building the tune's search space from what is known before measuring: the
/// memory plan (which N fits at the target context, for each micro-batch and
/// KV cache type, and with what headroom), the CPU topology (thread counts worth
/// measuring) and llama.cpp's own defaults on this machine.

#include <optional>
#include <string>
#include <vector>

#include "hw/cpu_topology.h"
#include "model/model_info.h"
#include "plan/placement.h"
#include "tune/tuner.h"

namespace moetune {

struct SpaceInputs {
  const ModelInfo* model = nullptr;
  /// The plan request for the target GPU (vram, reserve, margin, context);
  /// nullopt when no GPU is known (then every N "fits").
  std::optional<PlanRequest> plan;
  bool engine_has_gpu = true;
  const CpuTopology* cpu = nullptr;  // null: one thread candidate, `fallback_threads`
  int fallback_threads = 1;
  /// Thread counts given by the user (replace the topology's suggestions).
  std::vector<int> threads_override;
  /// RPC servers every configuration joins (--rpc), llama.cpp's defaults too.
  std::vector<std::string> rpc;
};

/// The search space. `notes` says what was assumed.
TuneSpace BuildTuneSpace(const SpaceInputs& in, std::vector<std::string>* notes);

/// Thread counts worth measuring on a topology: physical cores, performance
/// cores only, all logical CPUs, the cgroup quota, and one fewer than the
/// physical cores (a core left to the OS and the GPU driver), deduplicated.
std::vector<ThreadCandidate> ThreadCandidates(const CpuTopology& cpu);

/// llama.cpp's defaults for this machine: its default thread count, -b 2048
/// -ub 512, flash attention auto, and the placement its automatic fit chooses
/// for MoE models: every layer on the GPU, with the experts of the *last*
/// `fit_cpu_layers` layers kept in host memory (llama.cpp's --fit fills
/// layers with their experts front to back; common/fit.cpp). 0 = all on the GPU.
ServerConfig LlamaDefaults(const std::string& model, const CpuTopology* cpu, int n_layer,
                           int fit_cpu_layers);

}  // namespace moetune
