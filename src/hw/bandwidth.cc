#include "hw/bandwidth.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <thread>

namespace moetune {
namespace {

using Clock = std::chrono::steady_clock;

// Plain 64-bit loads, 8 per cache line, into 4 independent accumulators, with
// auto-vectorization off. A pure SIMD stream (AVX2) reads ~30% faster than
// sysbench on the shared 2-core CI VM under memory contention, because fewer
// instructions per line keep more misses in flight and win a larger share of a
// contended memory system; this loop lands within ~10-20% of sysbench there
// (sysbench's loop is one volatile load per iteration). It is also closer to what llama.cpp's
// dequantizing matmuls get, which interleave loads with arithmetic.
#if defined(__clang__)
#define MOETUNE_NO_VECTORIZE __attribute__((noinline))
#else
#define MOETUNE_NO_VECTORIZE __attribute__((noinline, optimize("no-tree-vectorize")))
#endif
MOETUNE_NO_VECTORIZE uint64_t ReadSlice(const uint64_t* p, const uint64_t* end) {
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t c = 0;
  uint64_t d = 0;
#if defined(__clang__)
#pragma clang loop vectorize(disable) interleave(disable)
#endif
  for (; p + 8 <= end; p += 8) {
    a += p[0] ^ p[4];
    b += p[1] ^ p[5];
    c += p[2] ^ p[6];
    d += p[3] ^ p[7];
  }
  for (; p < end; ++p) a += *p;
  return a + b + c + d;
}

// An anonymous mapping released on every exit path.
class Mapping {
 public:
  explicit Mapping(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // No MADV_HUGEPAGE: with THP defrag set to "madvise" (Debian's default) the
    // first touch of an madvised region compacts memory synchronously, which
    // took over 10 s on a loaded machine.
    if (p != MAP_FAILED) data_ = static_cast<char*>(p);
  }
  ~Mapping() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* data() const { return data_; }

 private:
  char* data_ = nullptr;
  size_t bytes_;
};

std::atomic<uint64_t> g_sink{0};  // keeps the reads observable

}  // namespace

int64_t BandwidthBufferBytes(int64_t llc_bytes, int64_t available_ram_bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  int64_t bytes = std::max<int64_t>(256 * kMiB, 8 * llc_bytes);
  bytes = std::min<int64_t>(bytes, 1024 * kMiB);
  if (available_ram_bytes > 0) bytes = std::min(bytes, available_ram_bytes / 4);
  bytes = std::max<int64_t>(bytes, 64 * kMiB);
  return bytes / (4 * kMiB) * (4 * kMiB);
}

Result<BandwidthResult> MeasureReadBandwidth(const BandwidthOptions& options) {
  const auto t_begin = Clock::now();
  BandwidthResult result;
  const int n = std::max<int>(1, static_cast<int>(options.cpus.size()));
  const int64_t want = options.buffer_bytes > 0
                           ? options.buffer_bytes
                           : BandwidthBufferBytes(options.llc_bytes, options.available_ram_bytes);
  // Every thread's slice is a whole number of 4 KiB pages (and of vectors).
  const int64_t slice = std::max<int64_t>(4096, want / n / 4096 * 4096);
  const int64_t total = slice * n;
  Mapping buffer(static_cast<size_t>(total));
  if (buffer.data() == nullptr) {
    return Error(ErrorKind::kIo, fmt::format("cannot allocate {} MiB for the bandwidth test; free "
                                             "some RAM or skip it with --no-bandwidth",
                                             total >> 20));
  }
  result.threads = n;
  result.buffer_bytes = total;

  std::vector<Clock::time_point> starts(static_cast<size_t>(n));
  std::vector<Clock::time_point> ends(static_cast<size_t>(n));
  std::atomic<bool> stop{false};
  int pass = -1;  // -1: the phase that ends first touch
  Clock::time_point measure_begin;
  auto on_phase_done = [&]() noexcept {
    if (pass >= 0) {
      const auto t0 = *std::min_element(starts.begin(), starts.end());
      const auto t1 = *std::max_element(ends.begin(), ends.end());
      const double s = std::chrono::duration<double>(t1 - t0).count();
      if (s > 0) result.pass_gbps.push_back(static_cast<double>(total) / s / 1e9);
    } else {
      measure_begin = Clock::now();
    }
    ++pass;
    const double spent = std::chrono::duration<double>(Clock::now() - measure_begin).count();
    if (pass >= options.max_passes || (pass >= 3 && spent >= options.time_budget_s)) {
      stop.store(true);
    }
  };
  std::barrier sync(n, on_phase_done);

  auto worker = [&](int i) {
    if (!options.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(options.cpus[static_cast<size_t>(i)], &set);
      pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
    }
    char* mine = buffer.data() + slice * i;
    // First touch from the pinned thread places pages on its NUMA node.
    std::memset(mine, i + 1, static_cast<size_t>(slice));
    const auto* b = reinterpret_cast<const uint64_t*>(mine);
    const auto* e = reinterpret_cast<const uint64_t*>(mine + slice);
    uint64_t sink = 0;
    sync.arrive_and_wait();
    while (!stop.load()) {
      starts[static_cast<size_t>(i)] = Clock::now();
      sink += ReadSlice(b, e);
      ends[static_cast<size_t>(i)] = Clock::now();
      sync.arrive_and_wait();
    }
    g_sink.fetch_add(sink, std::memory_order_relaxed);
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(worker, i);
  worker(0);
  for (auto& t : threads) t.join();

  if (!result.pass_gbps.empty()) {
    std::vector<double> sorted = result.pass_gbps;
    std::sort(sorted.begin(), sorted.end());
    result.read_gbps = sorted.back();
    result.median_gbps = sorted[sorted.size() / 2];
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - t_begin).count();
  return result;
}

}  // namespace moetune
