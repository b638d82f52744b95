// A stand-in for libnvidia-ml.so that exports the NVML entry points moetune's
// loader (src/hw/gpu_nvidia.cc) looks up, with the same C signatures and struct
// layouts as NVIDIA's public nvml.h. The unit tests dlopen it by path.
//
// Behaviour: fake_nvml_set_mode("normal" | "growing" | "init_fails" |
// "no_process_memory" | "v2_mismatch"), or the FAKE_NVML_MODE environment
// variable read by nvmlInit. Built twice: fake_nvml (a current driver) and
// fake_nvml_old (-DFAKE_NVML_OLD: no _v2/_v3 entry points, like drivers before
// R510, so the loader must fall back to the v1 queries).
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
struct nvmlProcessInfo_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};

}  // extern "C"

namespace {

constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInvalidArgument = 2;
constexpr nvmlReturn_t kNotFound = 6;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr nvmlReturn_t kDriverNotLoaded = 9;
constexpr nvmlReturn_t kArgumentVersionMismatch = 25;
constexpr unsigned long long kGiB = 1ULL << 30;
constexpr unsigned long long kMiB = 1ULL << 20;

std::string g_mode = "normal";
int g_process_calls = 0;
// One device; its handle is the address of this byte.
char g_device_tag = 0;

struct FakeProcess {
  unsigned pid;
  unsigned long long bytes;
};

// Two programs hold 1.7 GiB: a browser (1.2 GiB) and the X server (0.5 GiB).
// In "growing" mode each query sees 10 more processes than the previous one.
int ProcessCount() {
  if (g_mode == "growing") return 2 + 10 * g_process_calls;
  return 2;
}
FakeProcess ProcessAt(int i) {
  if (i == 0) return {4242, 1228 * kMiB + 819 * kMiB / 1000};  // ~1.2 GiB
  if (i == 1) return {4343, 512 * kMiB};
  return {static_cast<unsigned>(5000 + i), 16 * kMiB};
}
unsigned long long HeldBytes() {
  unsigned long long sum = 0;
  for (int i = 0; i < 2; ++i) sum += ProcessAt(i).bytes;
  return sum;
}

constexpr unsigned long long kTotal = 24 * kGiB;
constexpr unsigned long long kReserved = 300 * kMiB;

template <typename Info>
nvmlReturn_t FillProcesses(nvmlDevice_t dev, unsigned* count, Info* infos) {
  if (dev != reinterpret_cast<nvmlDevice_t>(&g_device_tag) || count == nullptr)
    return kInvalidArgument;
  const int n = ProcessCount();
  ++g_process_calls;
  if (*count < static_cast<unsigned>(n) || infos == nullptr) {
    *count = static_cast<unsigned>(n);
    return kInsufficientSize;
  }
  for (int i = 0; i < n; ++i) {
    std::memset(&infos[i], 0, sizeof(Info));
    infos[i].pid = ProcessAt(i).pid;
    infos[i].usedGpuMemory = g_mode == "no_process_memory" ? ~0ULL : ProcessAt(i).bytes;
  }
  *count = static_cast<unsigned>(n);
  return kSuccess;
}

bool IsDevice(nvmlDevice_t dev) { return dev == reinterpret_cast<nvmlDevice_t>(&g_device_tag); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void fake_nvml_set_mode(const char* mode) {
  g_mode = mode;
  g_process_calls = 0;
}
__attribute__((visibility("default"))) int fake_nvml_process_calls() { return g_process_calls; }

static nvmlReturn_t Init() {
  if (const char* env = std::getenv("FAKE_NVML_MODE")) fake_nvml_set_mode(env);
  return g_mode == "init_fails" ? kDriverNotLoaded : kSuccess;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit() { return Init(); }
__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() { return kSuccess; }
__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kSuccess:
      return "Success";
    case kInvalidArgument:
      return "Invalid Argument";
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    case kArgumentVersionMismatch:
      return "Argument Version Mismatch";
    default:
      return "Unknown Error";
  }
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetDriverVersion(char* buf,
                                                                               unsigned len) {
  std::strncpy(buf, "555.42.02-fake", len);
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount(unsigned* n) {
  *n = 1;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned i,
                                                                               nvmlDevice_t* dev) {
  if (i != 0) return kInvalidArgument;
  *dev = reinterpret_cast<nvmlDevice_t>(&g_device_tag);
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char* buf,
                                                                      unsigned len) {
  if (!IsDevice(dev)) return kInvalidArgument;
  std::strncpy(buf, "NVIDIA GeForce RTX 4090 (fake)", len);
  return kSuccess;
}
// v1: "used" includes the driver's reservation.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev,
                                                                            nvmlMemory_t* m) {
  if (!IsDevice(dev)) return kInvalidArgument;
  m->total = kTotal;
  m->used = HeldBytes() + kReserved;
  m->free = kTotal - m->used;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(
    nvmlDevice_t dev, unsigned* count, nvmlProcessInfo_v1_t* infos) {
  return FillProcesses(dev, count, infos);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(
    nvmlDevice_t dev, unsigned* count, nvmlProcessInfo_v1_t* infos) {
  if (count == nullptr) return kInvalidArgument;
  (void)dev;
  (void)infos;
  *count = 0;
  return kSuccess;
}
// Only pid 4242 is known to NVML; the loader must name 4343 from /proc/4343/comm.
__attribute__((visibility("default"))) nvmlReturn_t nvmlSystemGetProcessName(unsigned pid,
                                                                             char* buf,
                                                                             unsigned len) {
  if (pid != 4242) return kNotFound;
  std::strncpy(buf, "/usr/lib/firefox/firefox", len);
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(
    nvmlDevice_t, unsigned* v) {
  *v = 1;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(
    nvmlDevice_t, unsigned* v) {
  *v = 4;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t,
                                                                                   unsigned* v) {
  *v = 16;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t,
                                                                                  unsigned* v) {
  *v = 16;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t,
                                                                                unsigned* v) {
  *v = 384;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t,
                                                                              unsigned type,
                                                                              unsigned* mhz) {
  if (type != 2) return kInvalidArgument;  // NVML_CLOCK_MEM
  *mhz = 10501;
  return kSuccess;
}

#ifndef FAKE_NVML_OLD
__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() { return Init(); }
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  return nvmlDeviceGetCount(n);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(
    unsigned i, nvmlDevice_t* dev) {
  return nvmlDeviceGetHandleByIndex(i, dev);
}
// v2: reserved is reported apart; the struct's version must be nvmlMemory_v2.
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev,
                                                                               nvmlMemory_v2_t* m) {
  if (!IsDevice(dev)) return kInvalidArgument;
  const unsigned expected = static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2u << 24);
  if (g_mode == "v2_mismatch" || m->version != expected) return kArgumentVersionMismatch;
  m->total = kTotal;
  m->reserved = kReserved;
  m->used = HeldBytes();
  m->free = kTotal - kReserved - m->used;
  return kSuccess;
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
    nvmlDevice_t dev, unsigned* count, nvmlProcessInfo_t* infos) {
  return FillProcesses(dev, count, infos);
}
__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(
    nvmlDevice_t dev, unsigned* count, nvmlProcessInfo_t* infos) {
  if (count == nullptr) return kInvalidArgument;
  (void)dev;
  (void)infos;
  *count = 0;
  return kSuccess;
}
#endif

}  // extern "C"
