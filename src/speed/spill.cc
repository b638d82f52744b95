#include "speed/spill.h"

#include <algorithm>
#include <cmath>

namespace moetune {

SpillShares ComputeSpill(const GpuFootprint& f, int64_t budget) {
  SpillShares s;
  // First fit in llama.cpp's allocation order. The CUDA runtime is created
  // first; the weights come in large buffers and the KV cache grows page by
  // page as cells are written, so what does not fit of them is the part beyond
  // the room left. The compute buffer is one allocation: when it does not fit in
  // what is left, all of it lives in host memory (Windows places an allocation
  // in one segment).
  int64_t room = std::max<int64_t>(0, budget - f.runtime);
  auto fill = [&room](int64_t size, double* share) {
    if (size <= 0) return int64_t{0};
    const int64_t out = std::max<int64_t>(0, size - room);
    room = std::max<int64_t>(0, room - size);
    *share = static_cast<double>(out) / static_cast<double>(size);
    return out;
  };
  s.bytes += fill(f.weights, &s.weights);
  s.bytes += fill(f.kv_used + f.state, &s.kv);
  if (f.compute > room) {
    s.compute = 1.0;
    s.bytes += f.compute;
  }
  return s;
}

namespace {

// Bytes per second a kernel reads host memory at across the link.
double ZeroCopyRate(const SpillLoad& load, const CalibrationConstants& c) {
  return std::max(0.1, load.link_gbps) * 1e9 * c.spill_efficiency;
}

// Passes of a matrix product over its weights for `tokens` columns.
double WeightPasses(double tokens) { return std::max(1.0, std::ceil(tokens / kMatmulColumnTile)); }

}  // namespace

SpillTime PrefillSpillTime(const SpillShares& s, const SpillLoad& load, const GpuFootprint& f,
                           const CalibrationConstants& c) {
  SpillTime t;
  if (!s.any()) return t;
  const double rate = ZeroCopyRate(load, c);
  const double u = std::max(1, load.tokens);
  if (s.compute > 0) {
    // Every layer's activations (the compute buffer is sized for -ub tokens;
    // a shorter micro-batch uses its share).
    const double act = static_cast<double>(f.compute_stage) * c.activation_traffic *
                       load.gpu_layers * u / std::max(1, load.ubatch);
    // Op-offload copies land in the spilled buffer: the copy crosses the link a
    // second time, and the matrix products read the weights from host memory.
    const double copies = load.offload_bytes * s.compute;
    t.activations =
        act * s.compute / rate + copies / (std::max(0.1, load.copy_gbps) * 1e9) + copies / rate;
  }
  if (s.kv > 0) {
    // Flash attention streams a layer's cache once per block of query tokens.
    const double passes = std::ceil(u / kFlashAttnQueryTile);
    t.cache = s.kv * (load.kv_bytes * passes + load.state_bytes) / rate;
  }
  if (s.weights > 0) {
    const double dense = load.dense_bytes * WeightPasses(u);
    const double experts = load.expert_bytes * WeightPasses(u * load.expert_fraction);
    t.weights = s.weights * (dense + experts) / rate;
  }
  // Kernels that touch host memory wait for remote accesses: every layer when
  // the compute buffer (their inputs and outputs) is spilled, the attention
  // kernels when only the cache is, all layers in proportion for weights.
  const double layers = std::max(s.compute, s.weights) * load.gpu_layers +
                        (s.compute > 0 ? 0.0 : s.kv * load.attention_layers);
  t.latency = layers * c.spill_latency_us * 1e-6;
  return t;
}

SpillTime DecodeSpillTime(const SpillShares& s, const SpillLoad& load, const GpuFootprint& f,
                          const CalibrationConstants& c) {
  SpillTime t;
  if (!s.any()) return t;
  const double rate = ZeroCopyRate(load, c);
  if (s.compute > 0) {
    // One token's activations are written and read once per layer (the tile
    // re-reads of a micro-batch do not happen with one column).
    const double act =
        static_cast<double>(f.compute_stage) / std::max(1, load.ubatch) * 2.0 * load.gpu_layers;
    t.activations = s.compute * act / rate;
  }
  t.cache = s.kv * (load.kv_bytes + load.state_bytes) / rate;
  t.weights = s.weights * (load.dense_bytes + load.expert_bytes) / rate;
  const double layers = std::max(s.compute, s.weights) * load.gpu_layers +
                        (s.compute > 0 ? 0.0 : s.kv * load.attention_layers);
  t.latency = layers * c.spill_latency_us * 1e-6;
  return t;
}

}  // namespace moetune
