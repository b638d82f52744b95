// Ballast: holds GPU memory so that a large card behaves like a smaller one for llama.cpp
// (bench/gpu/run.sh emulates a 12 GiB card on whatever GPU it is given).
//
//   ballast FREE_MIB [DEVICE]
//
// Allocates device memory with cudaMalloc (physical VRAM on a discrete GPU, never paged) until
// cudaMemGetInfo reports FREE_MIB free on DEVICE (default 0), writes every allocation once so
// it is resident, prints one line "ballast: holding H MiB, free F MiB of T MiB" and waits
// until it is sent SIGTERM or SIGINT, then frees everything.
// Exit 2 for a bad argument, 1 when the device has less free memory than asked for or an
// allocation fails.
#include <cuda_runtime.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kChunk = 256 * kMiB;
constexpr size_t kAlign = 2 * kMiB;  // the driver's allocation granularity

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "ballast: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: ballast FREE_MIB [DEVICE]\n");
    return 2;
  }
  char* end = nullptr;
  errno = 0;
  const long long free_mib = std::strtoll(argv[1], &end, 10);
  if (errno != 0 || *end != '\0' || free_mib < 0) {
    std::fprintf(stderr, "ballast: FREE_MIB must be a whole number of MiB, not '%s'\n", argv[1]);
    return 2;
  }
  const int device = argc == 3 ? std::atoi(argv[2]) : 0;
  if (!Check(cudaSetDevice(device), "cudaSetDevice")) return 1;
  size_t free_bytes = 0, total_bytes = 0;
  if (!Check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo")) return 1;
  const size_t target = static_cast<size_t>(free_mib) * kMiB;
  if (free_bytes < target) {
    std::fprintf(stderr, "ballast: only %zu MiB free on device %d, less than the %lld MiB asked\n",
                 free_bytes / kMiB, device, free_mib);
    return 1;
  }
  std::vector<void*> held;
  size_t holding = 0;
  while (free_bytes > target + kAlign) {
    size_t want = free_bytes - target;
    if (want > kChunk) want = kChunk;
    want = want / kAlign * kAlign;
    void* p = nullptr;
    if (!Check(cudaMalloc(&p, want), "cudaMalloc")) break;
    if (!Check(cudaMemset(p, 0, want), "cudaMemset")) break;
    held.push_back(p);
    holding += want;
    if (!Check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo")) break;
  }
  if (!Check(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 1;
  std::printf("ballast: holding %zu MiB, free %zu MiB of %zu MiB\n", holding / kMiB,
              free_bytes / kMiB, total_bytes / kMiB);
  std::fflush(stdout);
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  while (!g_stop) sleep(1);  // a signal ends the sleep; the flag ends the loop
  for (void* p : held) cudaFree(p);
  return 0;
}
