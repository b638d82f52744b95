#pragma once
/// Ollama's own placement, as a baseline tune measures (people arrive from
/// Ollama): its automatic offload puts *whole layers* on the GPU, as many as
/// its estimate says fit the free memory, and knows nothing of experts. The
/// layers go to llama.cpp as -ngl K (the last K repeating layers, the output
/// layer as the K+1-th), with Ollama's default batch (512) and flash attention
/// off. Its estimate (ollama llm/memory.go EstimateGPULayers; discover/gpu.go
/// for the minimum) keeps free, beyond the offloaded layers, their KV cache
/// and the compute graph:
///   - one more layer's weights and KV cache as a buffer,
///   - a minimum per GPU library, 457 MiB for CUDA and ROCm (cudaMinimumMemory).
/// Here the layers, KV cache and compute buffers are moetune's exact memory
/// map of `-ngl K` (plan/placement.h PlanServerConfig), and Ollama's two
/// reserves are added on top, so K is the split Ollama would pick when its own
/// estimate of the graph is right.

#include <optional>
#include <string>

#include "config/server_config.h"
#include "hw/cpu_topology.h"
#include "model/model_info.h"
#include "plan/placement.h"

namespace moetune {

/// What Ollama keeps free on a CUDA or ROCm GPU besides the model (ollama
/// discover/gpu.go: cudaMinimumMemory = rocmMinimumMemory = 457 MiB).
inline constexpr int64_t kOllamaMinimumMemory = int64_t{457} << 20;

struct OllamaSplit {
  ServerConfig config;  // -ngl K, -c, -b/-ub 512, -fa off, -t physical cores
  int layers = 0;       // K: the repeating layers on the GPU (n_layer + 1: the output too)
  std::string how;      // one line: what the split is and how it was found
};

/// The whole-layer split Ollama would choose for `model` at `request`'s
/// context on `request`'s GPU (free memory minus the reserve); nullopt when no
/// GPU is described (vram_free 0) or the memory map cannot be computed.
std::optional<OllamaSplit> OllamaWholeLayerSplit(const ModelInfo& model, const PlanRequest& request,
                                                 const CpuTopology* cpu);

}  // namespace moetune
