#include "tune/ollama_split.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/units.h"

namespace moetune {
namespace {

// Ollama's defaults for a request that sets nothing (ollama api/types.go
// DefaultOptions: NumBatch 512, NumThread 0 = the physical cores; flash
// attention only with OLLAMA_FLASH_ATTENTION=1).
ServerConfig OllamaConfig(const ModelInfo& model, const PlanRequest& request,
                          const CpuTopology* cpu, int layers) {
  ServerConfig c;
  c.model = model.path;
  c.placement.n_gpu_layers = layers;
  c.placement.n_cpu_moe = -1;  // Ollama places whole layers only
  c.ctx_size = request.ctx.n_ctx;
  c.n_batch = 512;
  c.n_ubatch = 512;
  c.flash_attn = FlashAttn::kOff;
  c.threads = cpu != nullptr && cpu->physical_cores > 0 ? cpu->physical_cores : 4;
  return c;
}

}  // namespace

std::optional<OllamaSplit> OllamaWholeLayerSplit(const ModelInfo& model, const PlanRequest& request,
                                                 const CpuTopology* cpu) {
  const int n_layer = static_cast<int>(model.weights.layers.size());
  const int64_t free = request.vram_free - request.reserve;
  if (request.vram_free <= 0 || n_layer == 0 || free <= 0) return std::nullopt;
  // The GPU bytes Ollama's estimate asks for with k layers offloaded: the
  // memory map of -ngl k, one more layer as a buffer, the library's minimum.
  const int64_t layer_weights = model.weights.layers.front().total();
  auto needed = [&](int k) -> std::optional<int64_t> {
    auto o = PlanServerConfig(model.gguf, model.arch, model.weights, request,
                              OllamaConfig(model, request, cpu, k));
    if (!o.ok()) return std::nullopt;
    const int on_gpu = std::clamp(k, 1, n_layer);
    const int64_t kv_per_layer = o->gpu.kv / on_gpu;
    return o->gpu.total() + layer_weights + kv_per_layer + kOllamaMinimumMemory;
  };
  // The largest k that fits (more layers never need less memory): a binary
  // search over 0..n_layer+1, the last step being the output layer.
  int lo = 0;
  int hi = n_layer + 1;
  if (!needed(0)) return std::nullopt;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    const auto bytes = needed(mid);
    if (bytes && *bytes <= free) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  OllamaSplit s;
  s.layers = lo;
  s.config = OllamaConfig(model, request, cpu, lo);
  s.how = fmt::format(
      "Ollama's automatic offload: whole layers on the GPU, {} of {}{} (its estimate keeps one "
      "layer and {} free besides), -b/-ub 512, flash attention off, -t {}",
      std::min(lo, n_layer), n_layer, lo > n_layer ? " and the output layer" : "",
      FormatBytes(Bytes(kOllamaMinimumMemory)), s.config.threads);
  return s;
}

}  // namespace moetune
