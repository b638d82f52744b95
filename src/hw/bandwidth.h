#pragma once
/// Measured DRAM read bandwidth: the number that bounds decode speed for the
/// experts that stay in host RAM (each token reads k of n experts of every
/// CPU-side layer).
///
/// Method: one pinned thread per allowed physical core, each reading its own
/// slice of one buffer far larger than the last-level cache, with 64-bit loads
/// into independent accumulators (see ReadSlice in bandwidth.cc for why not SIMD). Passes start
/// together (barrier); a pass's time is the slowest thread's. The best pass wins: on a shared,
/// noisy machine interference only ever makes a pass slower, so the maximum is the least biased
/// estimate.

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
};

/// max(256 MiB, 8 x LLC), capped at 1 GiB and at a quarter of available RAM
/// (never below 64 MiB). The cap keeps the run short (first touch of the pages
/// costs as much as a few passes) on VMs that report a host-sized L3.
int64_t BandwidthBufferBytes(int64_t llc_bytes, int64_t available_ram_bytes);

/// Runs the measurement. Errors only when the buffer cannot be allocated.
Result<BandwidthResult> MeasureReadBandwidth(const BandwidthOptions& options);

}  // namespace moetune
