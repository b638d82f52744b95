#pragma once
/// Measured DRAM read bandwidth: the number that bounds decode speed for the
/// experts that stay in host RAM (each token reads k of n experts of every
/// CPU-side layer).
///
/// Method, as llama.cpp's CPU kernels read weights: one worker thread per
/// allowed physical core (pinned; the calling thread is never pinned, so the
/// processes doctor starts afterwards keep every CPU), each streaming its own
/// slice of a buffer far larger than the last-level cache with the widest SIMD
/// loads the CPU has (AVX-512, AVX2, SSE2, or plain 64-bit loads elsewhere),
/// four independent streams per thread (ggml's matmuls read several weight
/// rows at once) and independent accumulators. Passes start together
/// (barrier); a pass's time is the slowest thread's. The best pass wins: on a
/// shared, noisy machine interference only ever makes a pass slower, so the
/// maximum is the least biased estimate. doctor reports two independent
/// references beside it (bandwidth_reference.h).

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace moetune {

struct BandwidthOptions {
  std::vector<int> cpus;     // one thread pinned to each; empty = 1 unpinned thread
  int64_t buffer_bytes = 0;  // 0 = BandwidthBufferBytes(llc, available)
  int64_t llc_bytes = 0;
  int64_t available_ram_bytes = 0;
  int max_passes = 12;
  double time_budget_s = 1.5;  // stop adding passes after this much measuring time
};

struct BandwidthResult {
  double read_gbps = 0;  // best pass, 1e9 bytes per second
  double median_gbps = 0;
  std::vector<double> pass_gbps;  // every pass, in order
  int threads = 0;
  int64_t buffer_bytes = 0;
  double seconds = 0;  // wall time including allocation and first touch
  std::string kernel;  // "avx2, 4 streams per thread"
};

/// max(256 MiB, 8 x LLC), capped at 1 GiB and at a quarter of available RAM
/// (never below 64 MiB). The cap keeps the run short (first touch of the pages
/// costs as much as a few passes) on VMs that report a host-sized L3.
int64_t BandwidthBufferBytes(int64_t llc_bytes, int64_t available_ram_bytes);

/// The SIMD width the measurement uses on this CPU: "avx512", "avx2", "sse2" or "scalar".
std::string BandwidthKernelName();

/// Runs the measurement. Errors only when the buffer cannot be allocated.
Result<BandwidthResult> MeasureReadBandwidth(const BandwidthOptions& options);

}  // namespace moetune
