#pragma once
/// Silent spill: which of a run's GPU allocations the driver places in system
/// memory when they exceed free VRAM, and what every prefill micro-batch and
/// every decoded token then reads across the link (docs/speed-model.md,
/// "Overflow: strict and silent", has the sources).
///
/// Placement. The GPU is filled in llama.cpp's allocation order: the CUDA
/// runtime (context, cuBLAS workspace, ggml's memory pool), the weights, the KV
/// cache and recurrent state, then the compute buffer. The part of the weights
/// and of the cache beyond the room left lives in system memory (large buffers;
/// the cache counts the cells in use, written page by page, so a split that fits
/// at depth 0 can spill as the context grows). The compute buffer is a single
/// allocation: when it does not fit in what is left, all of it is placed in
/// system memory (Windows' sysmem fallback places an allocation whole). One
/// layer over the edge therefore moves the compute buffer, not the weights.
///
/// Traffic. A GPU kernel reads spilled memory over the link at the zero-copy
/// rate (`link pinned rate x spill_efficiency`), and every kernel that touches it
/// waits for remote accesses (`spill_latency_us` per layer):
///  - compute buffer spilled: every layer's activations, written once and read
///    `activation_traffic` times per micro-batch (matrix tiles re-read their
///    input); the op-offload copies of host weights land in it, so they cross
///    the link a second time and the kernels read them from there;
///  - KV cache spilled: attention streams a layer's whole cache once per query
///    tile (`kFlashAttnQueryTile` tokens of a micro-batch, once per decoded token);
///  - weights spilled: read once per column tile of `kMatmulColumnTile` tokens
///    (routed experts see only the tokens routed to them), once per decoded token.

#include <cstdint>

#include "speed/calibration.h"
#include "speed/gpu_footprint.h"

namespace moetune {

/// Shares of each allocation that live in host memory (silent spill).
struct SpillShares {
  int64_t bytes = 0;   // bytes in host memory
  double compute = 0;  // 0..1
  double kv = 0;
  double weights = 0;
  bool any() const { return bytes > 0; }
};

/// Fills the budget in allocation order and returns what lives in host memory
/// (`bytes` is what is spilled, not the overflow: a whole compute buffer).
SpillShares ComputeSpill(const GpuFootprint& f, int64_t budget);

/// Queries of a micro-batch one flash-attention block processes: prefill reads
/// a layer's whole cache once per block (ggml/src/ggml-cuda/fattn-mma-f16.cuh:
/// up to 64 query columns per block).
inline constexpr int kFlashAttnQueryTile = 64;
/// Token columns of one quantized matrix-multiplication tile (MMQ's largest
/// mmq_x, ggml/src/ggml-cuda/mmq.cuh): a weight tile is read once per column tile.
inline constexpr int kMatmulColumnTile = 128;

/// What one micro-batch (or one decoded token) touches on the accelerator.
struct SpillLoad {
  int tokens = 1;              // tokens of the micro-batch (1 for a decoded token)
  int ubatch = 512;            // the run's -ub (the compute buffer is sized for it)
  int gpu_layers = 0;          // layers with work on the GPU
  int attention_layers = 0;    // GPU layers whose attention reads a cache
  double dense_bytes = 0;      // GPU-resident dense and shared-expert weights read
  double expert_bytes = 0;     // GPU-resident routed-expert weights read
  double expert_fraction = 1;  // k / n: share of a micro-batch's tokens each expert sees
  double kv_bytes = 0;         // cache bytes attention reads once (all GPU layers)
  double state_bytes = 0;      // recurrent state read and written
  double offload_bytes = 0;    // op-offload copies of host weights (prefill)
  double link_gbps = 1;        // pinned host<->device rate, 1e9 B/s
  double copy_gbps = 1;        // the op-offload copy rate, 1e9 B/s
};

/// Seconds spent on spilled memory, by mechanism.
struct SpillTime {
  double activations = 0;  // compute buffer traffic (activations, offload copies)
  double cache = 0;        // KV cache and recurrent state reads
  double weights = 0;      // spilled weights
  double latency = 0;      // remote-access waits of the kernels that touch it
  double total() const { return activations + cache + weights + latency; }
};

/// The spill time of one prefill micro-batch.
SpillTime PrefillSpillTime(const SpillShares& s, const SpillLoad& load, const GpuFootprint& f,
                           const CalibrationConstants& c);

/// The spill time of one decoded token.
SpillTime DecodeSpillTime(const SpillShares& s, const SpillLoad& load, const GpuFootprint& f,
                          const CalibrationConstants& c);

}  // namespace moetune
