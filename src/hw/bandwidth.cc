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

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MOETUNE_X86 1
#endif

namespace moetune {
namespace {

using Clock = std::chrono::steady_clock;

// Each thread reads its slice as this many equal parts in lockstep: several
// independent hardware-prefetch streams, as a matmul reading several weight
// rows keeps in flight.
constexpr int kStreams = 4;

// Bytes read per stream per loop step by every kernel (a cache line).
constexpr std::size_t kStep = 64;

using Kernel = uint64_t (*)(const char* base, std::size_t part_bytes);

#ifdef MOETUNE_X86
__attribute__((target("avx512f"))) uint64_t ReadAvx512(const char* base, std::size_t part) {
  __m512i acc[kStreams] = {};
  for (std::size_t off = 0; off < part; off += kStep) {
    for (int s = 0; s < kStreams; ++s) {
      const auto* p =
          reinterpret_cast<const __m512i*>(base + static_cast<std::size_t>(s) * part + off);
      acc[s] = _mm512_xor_si512(acc[s], _mm512_load_si512(p));
    }
  }
  __m512i all = acc[0];
  for (int s = 1; s < kStreams; ++s) all = _mm512_xor_si512(all, acc[s]);
  alignas(64) uint64_t out[8];
  _mm512_store_si512(reinterpret_cast<__m512i*>(out), all);
  uint64_t sum = 0;
  for (uint64_t v : out) sum += v;
  return sum;
}

__attribute__((target("avx2"))) uint64_t ReadAvx2(const char* base, std::size_t part) {
  __m256i lo[kStreams] = {};
  __m256i hi[kStreams] = {};
  for (std::size_t off = 0; off < part; off += kStep) {
    for (int s = 0; s < kStreams; ++s) {
      const char* p = base + static_cast<std::size_t>(s) * part + off;
      lo[s] = _mm256_xor_si256(lo[s], _mm256_load_si256(reinterpret_cast<const __m256i*>(p)));
      hi[s] = _mm256_xor_si256(hi[s], _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32)));
    }
  }
  __m256i all = _mm256_xor_si256(lo[0], hi[0]);
  for (int s = 1; s < kStreams; ++s) all = _mm256_xor_si256(all, _mm256_xor_si256(lo[s], hi[s]));
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), all);
  return out[0] + out[1] + out[2] + out[3];
}

uint64_t ReadSse2(const char* base, std::size_t part) {
  __m128i acc[kStreams][4] = {};
  for (std::size_t off = 0; off < part; off += kStep) {
    for (int s = 0; s < kStreams; ++s) {
      const char* p = base + static_cast<std::size_t>(s) * part + off;
      for (int k = 0; k < 4; ++k) {
        acc[s][k] = _mm_xor_si128(
            acc[s][k],
            _mm_load_si128(reinterpret_cast<const __m128i*>(p + std::ptrdiff_t{16} * k)));
      }
    }
  }
  __m128i all = _mm_setzero_si128();
  for (auto& stream : acc) {
    for (auto& a : stream) all = _mm_xor_si128(all, a);
  }
  alignas(16) uint64_t out[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(out), all);
  return out[0] + out[1];
}
#else
// Portable: eight 64-bit loads per line and stream (the compiler may vectorize it).
uint64_t ReadScalar(const char* base, std::size_t part) {
  uint64_t acc[kStreams][8] = {};
  for (std::size_t off = 0; off < part; off += kStep) {
    for (int s = 0; s < kStreams; ++s) {
      const auto* p =
          reinterpret_cast<const uint64_t*>(base + static_cast<std::size_t>(s) * part + off);
      for (int k = 0; k < 8; ++k) acc[s][k] ^= p[k];
    }
  }
  uint64_t all = 0;
  for (auto& stream : acc) {
    for (uint64_t a : stream) all += a;
  }
  return all;
}
#endif

struct KernelChoice {
  Kernel fn;
  const char* name;
};

KernelChoice ChooseKernel() {
#ifdef MOETUNE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {ReadAvx512, "avx512"};
  if (__builtin_cpu_supports("avx2")) return {ReadAvx2, "avx2"};
  return {ReadSse2, "sse2"};
#else
  return {ReadScalar, "scalar"};
#endif
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

std::string BandwidthKernelName() { return ChooseKernel().name; }

Result<BandwidthResult> MeasureReadBandwidth(const BandwidthOptions& options) {
  const auto t_begin = Clock::now();
  const KernelChoice kernel = ChooseKernel();
  BandwidthResult result;
  const int n = std::max<int>(1, static_cast<int>(options.cpus.size()));
  const int64_t want = options.buffer_bytes > 0
                           ? options.buffer_bytes
                           : BandwidthBufferBytes(options.llc_bytes, options.available_ram_bytes);
  // Every thread's slice is a whole number of 4 KiB pages per stream.
  constexpr int64_t kUnit = int64_t{4096} * kStreams;
  const int64_t slice = std::max<int64_t>(kUnit, want / n / kUnit * kUnit);
  const int64_t total = slice * n;
  Mapping buffer(static_cast<size_t>(total));
  if (buffer.data() == nullptr) {
    return Error(ErrorKind::kIo, fmt::format("cannot allocate {} MiB for the bandwidth test; free "
                                             "some RAM or skip it with --no-bandwidth",
                                             total >> 20));
  }
  result.threads = n;
  result.buffer_bytes = total;
  result.kernel = fmt::format("{}, {} streams per thread", kernel.name, kStreams);

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

  // Every measuring thread is a new thread: pinning one never touches the
  // caller's affinity (which every process doctor starts afterwards inherits).
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
    const std::size_t part = static_cast<std::size_t>(slice / kStreams);
    uint64_t sink = 0;
    sync.arrive_and_wait();
    while (!stop.load()) {
      starts[static_cast<size_t>(i)] = Clock::now();
      sink += kernel.fn(mine, part);
      ends[static_cast<size_t>(i)] = Clock::now();
      sync.arrive_and_wait();
    }
    g_sink.fetch_add(sink, std::memory_order_relaxed);
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads.emplace_back(worker, i);
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
