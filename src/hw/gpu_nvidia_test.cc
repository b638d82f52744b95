#include "hw/gpu_nvidia.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>

// The fake NVML libraries are built by tests/CMakeLists.txt (tests/fake_nvml).
#ifndef MOETUNE_FAKE_NVML_PATH
#error "MOETUNE_FAKE_NVML_PATH must name the fake_nvml library (tests/CMakeLists.txt)"
#endif
#ifndef MOETUNE_FAKE_NVML_OLD_PATH
#error "MOETUNE_FAKE_NVML_OLD_PATH must name the fake_nvml_old library (tests/CMakeLists.txt)"
#endif

namespace moetune {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// Holds the fake library open (same handle as the loader's dlopen) to set its mode.
class FakeNvml {
 public:
  explicit FakeNvml(const char* path, const char* mode) {
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle_, nullptr) << dlerror();
    if (handle_ == nullptr) return;
    void* sym = dlsym(handle_, "fake_nvml_set_mode");
    void (*set_mode)(const char*) = nullptr;
    std::memcpy(&set_mode, &sym, sizeof(sym));
    EXPECT_NE(set_mode, nullptr);
    if (set_mode != nullptr) set_mode(mode);
    sym = dlsym(handle_, "fake_nvml_process_calls");
    std::memcpy(&calls_, &sym, sizeof(sym));
  }
  ~FakeNvml() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  int process_calls() const { return calls_ != nullptr ? calls_() : -1; }

 private:
  void* handle_ = nullptr;
  int (*calls_)() = nullptr;
};

NvidiaScanOptions Options(const char* library) {
  NvidiaScanOptions o;
  o.library = library;
  o.proc_root = SysRoot(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/hw/intel_hybrid_6p8e");
  return o;
}

const GpuProcess* FindPid(const GpuInfo& g, uint32_t pid) {
  for (const auto& p : g.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(NvidiaScan, AbsentLibraryMeansNoDriver) {
  const NvidiaScan scan = ScanNvidiaGpus(Options("/nonexistent/libnvidia-ml.so.1"));
  EXPECT_FALSE(scan.library_loaded);
  EXPECT_TRUE(scan.gpus.empty());
  ASSERT_EQ(scan.notes.size(), 1u);
  EXPECT_NE(scan.notes[0].find("no NVIDIA driver"), std::string::npos);
}

TEST(NvidiaScan, NormalDriverUsesV2Memory) {
  FakeNvml fake(MOETUNE_FAKE_NVML_PATH, "normal");
  const NvidiaScan scan = ScanNvidiaGpus(Options(MOETUNE_FAKE_NVML_PATH));
  ASSERT_TRUE(scan.initialized);
  EXPECT_EQ(scan.driver_version, "555.42.02-fake");
  ASSERT_EQ(scan.gpus.size(), 1u);
  const GpuInfo& g = scan.gpus[0];
  EXPECT_EQ(g.vendor, "nvidia");
  EXPECT_EQ(g.name, "NVIDIA GeForce RTX 4090 (fake)");
  EXPECT_EQ(g.memory_query, "nvmlDeviceGetMemoryInfo_v2");
  EXPECT_EQ(g.total_bytes, 24 * kGiB);
  EXPECT_EQ(g.reserved_bytes, 300 * kMiB);
  const int64_t held = 1228 * kMiB + 819 * kMiB / 1000 + 512 * kMiB;
  EXPECT_EQ(g.free_bytes, 24 * kGiB - 300 * kMiB - held);
  EXPECT_EQ(g.used_by_others_bytes, held);
  ASSERT_TRUE(g.processes_known);
  ASSERT_EQ(g.processes.size(), 2u);
  ASSERT_NE(FindPid(g, 4242), nullptr);
  EXPECT_EQ(FindPid(g, 4242)->name, "firefox");  // from NVML, path stripped
  ASSERT_NE(FindPid(g, 4343), nullptr);
  EXPECT_EQ(FindPid(g, 4343)->name, "Xorg");  // from /proc/4343/comm
  EXPECT_EQ(FindPid(g, 4343)->used_bytes, 512 * kMiB);
  EXPECT_EQ(g.pcie_gen_current, 1);
  EXPECT_EQ(g.pcie_gen_max, 4);
  EXPECT_EQ(g.pcie_width_max, 16);
  EXPECT_NEAR(g.pcie_bandwidth_gbps, 31.5, 0.1);
  EXPECT_EQ(g.memory_bus_width_bits, 384);
  EXPECT_EQ(g.memory_clock_max_mhz, 10501);
  EXPECT_NEAR(g.peak_bandwidth_gbps, 1008.1, 0.1);
}

TEST(NvidiaScan, OldDriverWithoutV2FunctionsFallsBack) {
  FakeNvml fake(MOETUNE_FAKE_NVML_OLD_PATH, "normal");
  const NvidiaScan scan = ScanNvidiaGpus(Options(MOETUNE_FAKE_NVML_OLD_PATH));
  ASSERT_TRUE(scan.initialized);
  ASSERT_EQ(scan.gpus.size(), 1u);
  const GpuInfo& g = scan.gpus[0];
  EXPECT_EQ(g.memory_query, "nvmlDeviceGetMemoryInfo");
  EXPECT_EQ(g.reserved_bytes, 0);
  // v1 counts the driver's reservation as used; the v1 process query still works.
  const int64_t held = 1228 * kMiB + 819 * kMiB / 1000 + 512 * kMiB;
  EXPECT_EQ(g.used_by_others_bytes, held + 300 * kMiB);
  EXPECT_EQ(g.processes.size(), 2u);
  EXPECT_TRUE(g.processes_known);
}

TEST(NvidiaScan, V2VersionMismatchFallsBackToV1) {
  FakeNvml fake(MOETUNE_FAKE_NVML_PATH, "v2_mismatch");
  const NvidiaScan scan = ScanNvidiaGpus(Options(MOETUNE_FAKE_NVML_PATH));
  ASSERT_EQ(scan.gpus.size(), 1u);
  EXPECT_EQ(scan.gpus[0].memory_query, "nvmlDeviceGetMemoryInfo");
  EXPECT_GT(scan.gpus[0].total_bytes, 0);
}

TEST(NvidiaScan, ProcessListGrowingBetweenCalls) {
  FakeNvml fake(MOETUNE_FAKE_NVML_PATH, "growing");
  const NvidiaScan scan = ScanNvidiaGpus(Options(MOETUNE_FAKE_NVML_PATH));
  ASSERT_EQ(scan.gpus.size(), 1u);
  const GpuInfo& g = scan.gpus[0];
  EXPECT_TRUE(g.processes_known);
  // The list grew by 10 on every call; the loader retried until it fit.
  EXPECT_GE(fake.process_calls(), 3);
  EXPECT_GT(g.processes.size(), 12u);
  EXPECT_EQ(g.processes.size(), static_cast<size_t>(2 + 10 * (fake.process_calls() - 1)));
}

TEST(NvidiaScan, UnknownPerProcessMemory) {
  FakeNvml fake(MOETUNE_FAKE_NVML_PATH, "no_process_memory");
  const NvidiaScan scan = ScanNvidiaGpus(Options(MOETUNE_FAKE_NVML_PATH));
  ASSERT_EQ(scan.gpus.size(), 1u);
  ASSERT_EQ(scan.gpus[0].processes.size(), 2u);
  EXPECT_FALSE(scan.gpus[0].processes[0].used_bytes.has_value());
}

TEST(NvidiaScan, InitFailureIsANoteNotACrash) {
  FakeNvml fake(MOETUNE_FAKE_NVML_PATH, "init_fails");
  const NvidiaScan scan = ScanNvidiaGpus(Options(MOETUNE_FAKE_NVML_PATH));
  EXPECT_TRUE(scan.library_loaded);
  EXPECT_FALSE(scan.initialized);
  EXPECT_TRUE(scan.gpus.empty());
  ASSERT_FALSE(scan.notes.empty());
  EXPECT_NE(scan.notes[0].find("Driver Not Loaded"), std::string::npos);
}

}  // namespace
}  // namespace moetune
