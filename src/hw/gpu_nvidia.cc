#include "hw/gpu_nvidia.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace moetune {
namespace {

// ---- NVML ABI, declared here instead of including nvml.h (not installed). ----
// Layouts and values follow NVIDIA's public nvml.h (CUDA 12.x / NVML API 12):
// nvmlReturn_t is an int enum; nvmlDevice_t an opaque pointer; the structs below
// are copied field for field, in order, so their C layout matches.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;

constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlErrorInsufficientSize = 7;          // NVML_ERROR_INSUFFICIENT_SIZE
constexpr unsigned kNvmlClockMem = 2;                         // NVML_CLOCK_MEM in nvmlClockType_t
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;  // NVML_VALUE_NOT_AVAILABLE

// typedef struct nvmlMemory_st { unsigned long long total, free, used; } nvmlMemory_t;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// typedef struct nvmlMemory_v2_st { unsigned int version; unsigned long long total,
//   reserved, free, used; } nvmlMemory_v2_t;
struct NvmlMemoryV2 {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// #define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2) = sizeof(nvmlMemory_v2_t) | (2 << 24)
constexpr unsigned kNvmlMemoryV2Version = static_cast<unsigned>(sizeof(NvmlMemoryV2)) | (2u << 24);
static_assert(sizeof(NvmlMemoryV2) == 40, "nvmlMemory_v2_t is 40 bytes on LP64");

// nvmlProcessInfo_v1_t { unsigned int pid; unsigned long long usedGpuMemory; }
struct NvmlProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
// nvmlProcessInfo_t (= _v2_t), used by the _v2 and _v3 process queries:
// { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId,
//   computeInstanceId; }
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(NvmlProcessInfo) == 24, "nvmlProcessInfo_t is 24 bytes on LP64");

// nvmlPciInfo_t { char busIdLegacy[16]; unsigned int domain, bus, device,
//   pciDeviceId, pciSubSystemId; char busId[32]; }
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

using FnVoid = NvmlReturn (*)();
using FnErrorString = const char* (*)(NvmlReturn);
using FnCount = NvmlReturn (*)(unsigned*);
using FnHandleByIndex = NvmlReturn (*)(unsigned, NvmlDevice*);
using FnString = NvmlReturn (*)(NvmlDevice, char*, unsigned);
using FnSysString = NvmlReturn (*)(char*, unsigned);
using FnMemory = NvmlReturn (*)(NvmlDevice, NvmlMemory*);
using FnMemoryV2 = NvmlReturn (*)(NvmlDevice, NvmlMemoryV2*);
using FnProcs = NvmlReturn (*)(NvmlDevice, unsigned*, NvmlProcessInfo*);
using FnProcsV1 = NvmlReturn (*)(NvmlDevice, unsigned*, NvmlProcessInfoV1*);
using FnProcessName = NvmlReturn (*)(unsigned, char*, unsigned);
using FnUint = NvmlReturn (*)(NvmlDevice, unsigned*);
using FnClock = NvmlReturn (*)(NvmlDevice, unsigned, unsigned*);
using FnPci = NvmlReturn (*)(NvmlDevice, NvmlPciInfo*);

// The loaded library and its entry points; dlclose (after nvmlShutdown) on exit.
class Nvml {
 public:
  explicit Nvml(const std::string& library) {
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* e = dlerror();
      load_error_ = e != nullptr ? e : "dlopen failed";
    }
  }
  ~Nvml() {
    if (initialized_ && shutdown_ != nullptr) shutdown_();
    if (handle_ != nullptr) dlclose(handle_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool loaded() const { return handle_ != nullptr; }
  const std::string& load_error() const { return load_error_; }

  // dlsym returns an object pointer; copying its bits into a function pointer
  // is how POSIX intends it to be used (a cast would trip -Wpedantic).
  template <typename F>
  F Sym(const char* name) const {
    void* p = dlsym(handle_, name);
    F f = nullptr;
    static_assert(sizeof(f) == sizeof(p));
    std::memcpy(&f, &p, sizeof(f));
    return f;
  }

  std::string ErrorString(NvmlReturn r) const {
    auto fn = Sym<FnErrorString>("nvmlErrorString");
    const char* s = fn != nullptr ? fn(r) : nullptr;
    return s != nullptr ? fmt::format("{} (NVML error {})", s, r) : fmt::format("NVML error {}", r);
  }

  void set_initialized(FnVoid shutdown) {
    initialized_ = true;
    shutdown_ = shutdown;
  }

 private:
  void* handle_ = nullptr;
  std::string load_error_;
  bool initialized_ = false;
  FnVoid shutdown_ = nullptr;
};

// Calls a process-list query, growing the buffer while the list grows between
// the sizing call and the filling call (NVML_ERROR_INSUFFICIENT_SIZE again).
template <typename Info, typename Fn>
NvmlReturn QueryProcesses(Fn fn, NvmlDevice dev, std::vector<Info>* out) {
  unsigned count = 0;
  NvmlReturn r = fn(dev, &count, nullptr);
  if (r == kNvmlSuccess) {
    out->clear();
    return r;
  }
  size_t capacity = 0;
  for (int attempt = 0; attempt < 6 && r == kNvmlErrorInsufficientSize; ++attempt) {
    capacity = std::max<size_t>(static_cast<size_t>(count) + 8, capacity * 2);
    out->assign(capacity, Info{});
    count = static_cast<unsigned>(capacity);
    r = fn(dev, &count, out->data());
  }
  if (r == kNvmlSuccess) out->resize(std::min<size_t>(count, out->size()));
  return r;
}

std::string Basename(std::string s) {
  const size_t slash = s.rfind('/');
  if (slash != std::string::npos) s = s.substr(slash + 1);
  return s;
}

void ReadProcesses(const Nvml& nvml, NvmlDevice dev, const SysRoot& proc_root, GpuInfo* g) {
  std::map<unsigned, GpuProcess> by_pid;
  bool any_query = false;
  auto add = [&](unsigned pid, unsigned long long used) {
    GpuProcess& p = by_pid[pid];
    p.pid = pid;
    if (used != kNvmlValueNotAvailable) {
      const auto v = static_cast<int64_t>(used);
      p.used_bytes = std::max(p.used_bytes.value_or(0), v);
    }
  };
  for (const char* kind : {"Compute", "Graphics"}) {
    const std::string base = fmt::format("nvmlDeviceGet{}RunningProcesses", kind);
    NvmlReturn r = -1;
    if (auto v3 = nvml.Sym<FnProcs>((base + "_v3").c_str())) {
      std::vector<NvmlProcessInfo> infos;
      r = QueryProcesses<NvmlProcessInfo>(v3, dev, &infos);
      for (const auto& i : infos) add(i.pid, i.usedGpuMemory);
    } else if (auto v2 = nvml.Sym<FnProcs>((base + "_v2").c_str())) {
      std::vector<NvmlProcessInfo> infos;
      r = QueryProcesses<NvmlProcessInfo>(v2, dev, &infos);
      for (const auto& i : infos) add(i.pid, i.usedGpuMemory);
    } else if (auto v1 = nvml.Sym<FnProcsV1>(base.c_str())) {
      std::vector<NvmlProcessInfoV1> infos;
      r = QueryProcesses<NvmlProcessInfoV1>(v1, dev, &infos);
      for (const auto& i : infos) add(i.pid, i.usedGpuMemory);
    } else {
      g->notes.push_back(fmt::format("{} not in the NVML library", base));
      continue;
    }
    if (r == kNvmlSuccess) {
      any_query = true;
    } else {
      g->notes.push_back(fmt::format("{}: {}", base, nvml.ErrorString(r)));
    }
  }
  g->processes_known = any_query;
  auto name_fn = nvml.Sym<FnProcessName>("nvmlSystemGetProcessName");
  for (auto& [pid, p] : by_pid) {
    char buf[256] = {};
    if (name_fn != nullptr && name_fn(pid, buf, sizeof(buf)) == kNvmlSuccess && buf[0] != '\0') {
      p.name = Basename(buf);
    } else if (auto comm = proc_root.ReadLine(fmt::format("/proc/{}/comm", pid))) {
      p.name = *comm;
    }
    g->processes.push_back(p);
  }
}

void ReadDevice(const Nvml& nvml, NvmlDevice dev, const SysRoot& proc_root, GpuInfo* g) {
  char name[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
  if (auto fn = nvml.Sym<FnString>("nvmlDeviceGetName");
      fn != nullptr && fn(dev, name, sizeof(name)) == kNvmlSuccess) {
    g->name = name;
  }
  NvmlPciInfo pci{};
  for (const char* sym : {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"}) {
    if (auto fn = nvml.Sym<FnPci>(sym); fn != nullptr && fn(dev, &pci) == kNvmlSuccess) {
      pci.busId[sizeof(pci.busId) - 1] = '\0';
      g->pci_bus_id = pci.busId;
      break;
    }
  }

  bool have_memory = false;
  if (auto v2 = nvml.Sym<FnMemoryV2>("nvmlDeviceGetMemoryInfo_v2")) {
    NvmlMemoryV2 m{};
    m.version = kNvmlMemoryV2Version;
    const NvmlReturn r = v2(dev, &m);
    if (r == kNvmlSuccess) {
      g->total_bytes = static_cast<int64_t>(m.total);
      g->free_bytes = static_cast<int64_t>(m.free);
      g->used_bytes = static_cast<int64_t>(m.used);
      g->reserved_bytes = static_cast<int64_t>(m.reserved);
      g->memory_query = "nvmlDeviceGetMemoryInfo_v2";
      have_memory = true;
    } else {
      g->notes.push_back("nvmlDeviceGetMemoryInfo_v2: " + nvml.ErrorString(r) +
                         "; using the v1 query");
    }
  }
  if (!have_memory) {
    if (auto v1 = nvml.Sym<FnMemory>("nvmlDeviceGetMemoryInfo")) {
      NvmlMemory m{};
      const NvmlReturn r = v1(dev, &m);
      if (r == kNvmlSuccess) {
        g->total_bytes = static_cast<int64_t>(m.total);
        g->free_bytes = static_cast<int64_t>(m.free);
        g->used_bytes = static_cast<int64_t>(m.used);
        g->memory_query = "nvmlDeviceGetMemoryInfo";
        g->notes.push_back("old driver: v1 memory query, driver-reserved memory counted as used");
        have_memory = true;
      } else {
        g->notes.push_back("nvmlDeviceGetMemoryInfo: " + nvml.ErrorString(r));
      }
    }
  }
  if (have_memory) {
    g->used_by_others_bytes =
        std::max<int64_t>(0, g->total_bytes - g->free_bytes - g->reserved_bytes);
  }
  ReadProcesses(nvml, dev, proc_root, g);

  auto read_uint = [&](const char* sym, int* out) {
    unsigned v = 0;
    auto fn = nvml.Sym<FnUint>(sym);
    if (fn != nullptr && fn(dev, &v) == kNvmlSuccess) {
      *out = static_cast<int>(v);
    } else {
      g->notes.push_back(fmt::format("{} not available", sym));
    }
  };
  read_uint("nvmlDeviceGetCurrPcieLinkGeneration", &g->pcie_gen_current);
  read_uint("nvmlDeviceGetMaxPcieLinkGeneration", &g->pcie_gen_max);
  read_uint("nvmlDeviceGetCurrPcieLinkWidth", &g->pcie_width_current);
  read_uint("nvmlDeviceGetMaxPcieLinkWidth", &g->pcie_width_max);
  read_uint("nvmlDeviceGetMemoryBusWidth", &g->memory_bus_width_bits);
  unsigned clock = 0;
  if (auto fn = nvml.Sym<FnClock>("nvmlDeviceGetMaxClockInfo");
      fn != nullptr && fn(dev, kNvmlClockMem, &clock) == kNvmlSuccess) {
    g->memory_clock_max_mhz = static_cast<int>(clock);
  } else {
    g->notes.push_back("nvmlDeviceGetMaxClockInfo(NVML_CLOCK_MEM) not available");
  }
  g->pcie_bandwidth_gbps = PcieBandwidthGbps(g->pcie_gen_max, g->pcie_width_max);
  g->peak_bandwidth_gbps = GpuPeakBandwidthGbps(g->memory_bus_width_bits, g->memory_clock_max_mhz);
}

}  // namespace

NvidiaScan ScanNvidiaGpus(const NvidiaScanOptions& options) {
  NvidiaScan scan;
  Nvml nvml(options.library);
  if (!nvml.loaded()) {
    scan.notes.push_back(fmt::format("no NVIDIA driver: {} could not be loaded ({})",
                                     options.library, nvml.load_error()));
    return scan;
  }
  scan.library_loaded = true;
  auto init = nvml.Sym<FnVoid>("nvmlInit_v2");
  if (init == nullptr) init = nvml.Sym<FnVoid>("nvmlInit");
  auto shutdown = nvml.Sym<FnVoid>("nvmlShutdown");
  if (init == nullptr) {
    scan.notes.push_back(fmt::format("{} has no nvmlInit: not an NVML library", options.library));
    return scan;
  }
  if (const NvmlReturn r = init(); r != kNvmlSuccess) {
    scan.notes.push_back(
        fmt::format("NVIDIA driver library found but nvmlInit failed: {}; is the "
                    "kernel driver loaded (nvidia-smi)?",
                    nvml.ErrorString(r)));
    return scan;
  }
  nvml.set_initialized(shutdown);
  scan.initialized = true;
  char version[80] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
  if (auto fn = nvml.Sym<FnSysString>("nvmlSystemGetDriverVersion");
      fn != nullptr && fn(version, sizeof(version)) == kNvmlSuccess) {
    scan.driver_version = version;
  }
  auto count_fn = nvml.Sym<FnCount>("nvmlDeviceGetCount_v2");
  if (count_fn == nullptr) count_fn = nvml.Sym<FnCount>("nvmlDeviceGetCount");
  auto handle_fn = nvml.Sym<FnHandleByIndex>("nvmlDeviceGetHandleByIndex_v2");
  if (handle_fn == nullptr) handle_fn = nvml.Sym<FnHandleByIndex>("nvmlDeviceGetHandleByIndex");
  unsigned count = 0;
  if (count_fn == nullptr || handle_fn == nullptr) {
    scan.notes.push_back("NVML library lacks nvmlDeviceGetCount/nvmlDeviceGetHandleByIndex");
    return scan;
  }
  if (const NvmlReturn r = count_fn(&count); r != kNvmlSuccess) {
    scan.notes.push_back("nvmlDeviceGetCount: " + nvml.ErrorString(r));
    return scan;
  }
  for (unsigned i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = static_cast<int>(i);
    g.vendor = "nvidia";
    NvmlDevice dev = nullptr;
    if (const NvmlReturn r = handle_fn(i, &dev); r != kNvmlSuccess) {
      g.notes.push_back("nvmlDeviceGetHandleByIndex: " + nvml.ErrorString(r));
    } else {
      ReadDevice(nvml, dev, options.proc_root, &g);
    }
    scan.gpus.push_back(std::move(g));
  }
  if (count == 0) scan.notes.push_back("NVIDIA driver loaded but it reports no GPU");
  return scan;
}

}  // namespace moetune
