// Integration: the real `moetune doctor --json` on this machine, checked against
// the kernel (sched_getaffinity), the driver (NVML present or not) and an
// independent memory benchmark (sysbench) run in the same test.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "hw/machine_profile.h"
#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

using nlohmann::json;

double SysbenchOnce();

json RunDoctorJson(const std::vector<std::string>& extra, CommandResult* raw = nullptr) {
  std::vector<std::string> argv = {MoetuneBinary(), "doctor", "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  CommandResult r = RunCommand(argv, 60);
  if (raw != nullptr) *raw = r;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.timed_out);
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

// sysbench's sequential read test, 2 threads over a 1 GiB block; GB/s (1e9).
// Best of 3 short runs, the same rule doctor applies to its own passes.
double SysbenchReadGbps() {
  double best = 0;
  for (int i = 0; i < 3; ++i) best = std::max(best, SysbenchOnce());
  return best;
}

double SysbenchOnce() {
  auto sysbench = ResolveProgram("sysbench");
  if (!sysbench.ok()) {
    ADD_FAILURE() << "sysbench is required (scripts/install-deps.sh): "
                  << sysbench.error().message();
    return 0;
  }
  CommandResult r = RunCommand({*sysbench, "memory", "--memory-oper=read", "--memory-block-size=1G",
                                "--memory-total-size=4G", "--threads=2", "run"},
                               120);
  EXPECT_EQ(r.exit_code, 0) << "sysbench is required (scripts/install-deps.sh): " << r.err;
  std::smatch m;
  const std::regex re(R"(\(([0-9.]+) MiB/sec\))");
  if (!std::regex_search(r.out, m, re)) {
    ADD_FAILURE() << "no MiB/sec figure in sysbench output:\n" << r.out;
    return 0;
  }
  return std::stod(m[1].str()) * 1048576.0 / 1e9;
}

TEST(Doctor, JsonMatchesKernelDriverAndSysbench) {
  TempDir dir;
  const std::string profile = dir.File("machine.json");
  CommandResult raw;
  json j = RunDoctorJson({"--profile", profile}, &raw);
  ASSERT_TRUE(j.is_object());

  // Logical CPUs: exactly what the kernel lets this process use.
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(j["cpu"]["logical_cpus"].get<int>(), CPU_COUNT(&set));
  EXPECT_FALSE(j["cpu"]["suggested_threads"].empty());
  EXPECT_GT(j["cpu"]["llama_default_threads"].get<int>(), 0);

  // GPUs: none and a "no NVIDIA driver" note where the driver library is absent.
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) {
    EXPECT_TRUE(j["gpus"].empty());
    const auto notes = j["gpu_notes"].get<std::vector<std::string>>();
    EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
      return n.find("no NVIDIA driver") != std::string::npos;
    })) << j["gpu_notes"].dump();
  } else {
    dlclose(nvml);
    ASSERT_FALSE(j["gpus"].empty()) << j["gpu_notes"].dump();
    EXPECT_GT(j["gpus"][0]["total_bytes"].get<int64_t>(), 0);
    EXPECT_GE(j["gpus"][0]["free_bytes"].get<int64_t>(), 0);
  }

  // Memory and the saved profile.
  EXPECT_GT(j["memory"]["total_bytes"].get<int64_t>(), 0);
  auto loaded = LoadMachineProfile(profile);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_EQ(loaded->cpu.logical_cpus, CPU_COUNT(&set));
  ASSERT_TRUE(loaded->bandwidth.has_value());

  // Bandwidth: within 25% of sysbench measured in the same test. The machine is
  // shared and noisy, so each side keeps its best of up to 3 interleaved rounds
  // (interference only ever slows a run down).
  double doctor_best = j["memory"]["read_bandwidth_gbps"].get<double>();
  double sysbench_best = SysbenchReadGbps();
  double doctor_seconds = j["doctor_seconds"].get<double>();
  for (int round = 1; round < 3; ++round) {
    const double ratio = doctor_best / sysbench_best;
    if (ratio > 0.75 && ratio < 1.25) break;
    json again = RunDoctorJson({"--no-save", "--no-engine"});
    doctor_best = std::max(doctor_best, again["memory"]["read_bandwidth_gbps"].get<double>());
    sysbench_best = std::max(sysbench_best, SysbenchReadGbps());
  }
  std::cout << "doctor read bandwidth " << doctor_best << " GB/s, sysbench " << sysbench_best
            << " GB/s, doctor wall time " << doctor_seconds << " s\n";
  RecordProperty("doctor_read_gbps", std::to_string(doctor_best));
  RecordProperty("sysbench_read_gbps", std::to_string(sysbench_best));
  ASSERT_GT(sysbench_best, 0);
  EXPECT_NEAR(doctor_best / sysbench_best, 1.0, 0.25)
      << "doctor " << doctor_best << " GB/s vs sysbench " << sysbench_best << " GB/s";
  // Quick by design (~2 s); generous bound for a loaded 2-core machine.
  EXPECT_LT(doctor_seconds, 10.0);
}

TEST(Doctor, MissingSourcesAreNamedNotFatal) {
  TempDir empty;
  json j = RunDoctorJson({"--sysroot", empty.path().string(), "--nvml-library",
                          "/nonexistent/libnvidia-ml.so.1", "--no-bandwidth", "--no-engine",
                          "--no-save"});
  ASSERT_TRUE(j.is_object());
  const auto missing = j["missing_sources"].get<std::vector<std::string>>();
  auto names = [&](const std::string& what) {
    return std::any_of(missing.begin(), missing.end(),
                       [&](const std::string& s) { return s.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(names("no NVIDIA driver")) << j["missing_sources"].dump(2);
  EXPECT_TRUE(names("/proc/meminfo")) << j["missing_sources"].dump(2);
  EXPECT_TRUE(names("/proc/cpuinfo")) << j["missing_sources"].dump(2);
  EXPECT_TRUE(names("/sys/class/drm")) << j["missing_sources"].dump(2);
  EXPECT_TRUE(names("bandwidth")) << j["missing_sources"].dump(2);
  EXPECT_TRUE(j["memory"]["read_bandwidth_gbps"].is_null());
}

TEST(Doctor, FixtureMachineAndModelVerdicts) {
  // A hybrid Intel fixture tree: doctor reports its thread candidates.
  const std::string root = std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/hw/intel_hybrid_6p8e";
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  CommandResult s =
      RunCommand({MoetuneBinary(), "synth", "--preset", "qwen3moe", "-o", model}, 120);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  json j = RunDoctorJson({"--sysroot", root, "--nvml-library", "/nonexistent/libnvidia-ml.so.1",
                          "--no-bandwidth", "--no-engine", "--no-save", "--model", model, "--ctx",
                          "8K"});
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["cpu"]["logical_cpus"].get<int>(), 20);
  EXPECT_EQ(j["cpu"]["llama_default_threads"].get<int>(), 6);
  ASSERT_TRUE(j["model"].is_object());
  EXPECT_EQ(j["model"]["ctx"].get<int64_t>(), 8192);
  EXPECT_FALSE(j["model"]["expert_bytes_by_layer"].empty());
  std::vector<std::string> ids;
  for (const auto& v : j["verdicts"]) ids.push_back(v["id"].get<std::string>());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "hybrid_cpu"), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), "no_gpu"), ids.end());
  // Verdicts come ordered by impact.
  for (size_t i = 1; i < j["verdicts"].size(); ++i) {
    EXPECT_GE(j["verdicts"][i - 1]["impact"].get<int>(), j["verdicts"][i]["impact"].get<int>());
  }
}

TEST(Doctor, FakeNvidiaDriverEndToEnd) {
  // The real binary against the fake NVML library (tests/fake_nvml): one 24 GiB
  // GPU on which firefox and Xorg hold 1.7 GiB.
  TempDir dir;
  json j = RunDoctorJson({"--nvml-library", MOETUNE_FAKE_NVML_PATH, "--no-bandwidth", "--no-engine",
                          "--profile", dir.File("machine.json")});
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["gpus"].size(), 1u);
  const json& g = j["gpus"][0];
  EXPECT_EQ(g["memory_query"], "nvmlDeviceGetMemoryInfo_v2");
  EXPECT_EQ(g["total_bytes"].get<int64_t>(), int64_t{24} << 30);
  EXPECT_EQ(g["processes"].size(), 2u);
  EXPECT_EQ(g["processes"][0]["name"], "firefox");
  bool held = false;
  for (const auto& v : j["verdicts"]) held = held || v["id"] == "vram_held_gpu0";
  EXPECT_TRUE(held) << j["verdicts"].dump(2);
  // The saved profile carries the free VRAM that plan uses for --vram.
  auto loaded = LoadMachineProfile(dir.File("machine.json"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_EQ(loaded->TotalFreeVramBytes(), g["free_bytes"].get<int64_t>());
}

TEST(Doctor, BadContextIsAClearError) {
  CommandResult r = RunCommand({MoetuneBinary(), "doctor", "--model", "/nonexistent.gguf", "--ctx",
                                "lots", "--no-save", "--no-bandwidth", "--no-engine"},
                               60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("lots"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace moetune::itest
