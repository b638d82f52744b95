#include "engine/engine_info.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace moetune {
namespace {

namespace fs = std::filesystem;

TEST(EngineInfoTest, ParsesDebianVersionLine) {
  EngineInfo info;
  ParseVersionOutput(
      "ggml_backend_load_best: failed to enumerate /usr/lib/x86_64-linux-gnu/ggml/backends0: No "
      "such file\n"
      "load_backend: loaded CPU backend from /x/libggml-cpu-sapphirerapids.so\n"
      "version: 0.7.0 (build 11669, commit Debian)\nbuilt with GNU 16.2.0 for Linux x86_64\n",
      &info);
  EXPECT_EQ(info.version, "0.7.0");
  EXPECT_EQ(info.build_number, 11669);
  EXPECT_EQ(info.commit, "Debian");
  EXPECT_EQ(info.built_with, "GNU 16.2.0 for Linux x86_64");
}

TEST(EngineInfoTest, ParsesUpstreamVersionLine) {
  EngineInfo info;
  ParseVersionOutput("version: 6540 (4f1d2a3b)\nbuilt with cc (GCC) 13.2 for x86_64-linux-gnu\n",
                     &info);
  EXPECT_EQ(info.build_number, 6540);
  EXPECT_EQ(info.commit, "4f1d2a3b");
  EXPECT_TRUE(info.version.empty());
}

TEST(EngineInfoTest, ParsesDeviceList) {
  const auto none = ParseListDevices("Available devices:\n  (none)\n");
  EXPECT_TRUE(none.empty());
  const auto devs = ParseListDevices(
      "Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23000 MiB free)\n"
      "  Vulkan0: AMD Radeon (RADV NAVI31) (16368 MiB, 16000 MiB free)\n");
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].name, "CUDA0");
  EXPECT_EQ(devs[0].description, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(devs[0].total->count(), Bytes::MiB(24080).count());
  EXPECT_EQ(devs[0].free->count(), Bytes::MiB(23000).count());
  EXPECT_EQ(devs[1].description, "AMD Radeon (RADV NAVI31)");
}

TEST(EngineInfoTest, ParsesHelpFlags) {
  const auto flags = ParseHelpFlags(
      "usage: llama-bench [options]\n\noptions:\n  -h, --help\n"
      "  --progress                                  print test progress indicators\n"
      "  -ncmoe, --n-cpu-moe <n>                           (default: 0)\n"
      "  -ot --override-tensor <tensor name pattern>=<buffer type>;...\n"
      "  -lm, --load-mode <auto|none|mmap|mlock|mmap+mlock|dio> (default: auto)\n"
      "  -d, --n-depth <n>                                 (default: 0)\n");
  for (const char* f : {"-h", "--help", "--progress", "-ncmoe", "--n-cpu-moe", "-ot",
                        "--override-tensor", "-lm", "-d", "--n-depth"}) {
    EXPECT_TRUE(flags.count(f)) << f;
  }
  EXPECT_FALSE(flags.count("<n>"));
  EXPECT_FALSE(flags.count("-fitt"));
}

TEST(EngineInfoTest, ParsesLoadedBackends) {
  const auto b = ParseLoadedBackends(
      "load_backend: loaded RPC backend from /x/libggml-rpc.so\n"
      "load_backend: loaded CPU backend from /x/libggml-cpu-haswell.so\n"
      "load_backend: loaded CPU backend from /x/libggml-cpu-haswell.so\n");
  EXPECT_EQ(b, (std::vector<std::string>{"RPC", "CPU"}));
}

class FakeRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / "moetune_engine_root";
    fs::remove_all(root_);
    fs::create_directories(root_ / "sys/bus/pci/devices/0000:01:00.0");
    fs::create_directories(root_ / "sys/bus/pci/devices/0000:00:02.0");
    std::ofstream(root_ / "sys/bus/pci/devices/0000:00:02.0/vendor") << "0x8086\n";
    std::ofstream(root_ / "sys/bus/pci/devices/0000:00:02.0/class") << "0x030000\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  void AddNvidia() {
    std::ofstream(root_ / "sys/bus/pci/devices/0000:01:00.0/vendor") << "0x10de\n";
    std::ofstream(root_ / "sys/bus/pci/devices/0000:01:00.0/class") << "0x030200\n";
  }
  fs::path root_;
};

TEST_F(FakeRoot, NvidiaDetectionFromPci) {
  EXPECT_FALSE(NvidiaGpuPresent(root_.string()));
  AddNvidia();
  EXPECT_TRUE(NvidiaGpuPresent(root_.string()));
}

TEST(EngineWarningsTest, NvidiaWithoutCudaWarnsWithTheFix) {
  EngineInfo info;
  info.dir = "/opt/llama";
  info.backends = {"RPC", "CPU"};
  info.bench_flags = {"-ncmoe"};
  const auto w = EngineWarnings(info, true);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("no CUDA backend"), std::string::npos);
  EXPECT_NE(w[0].find("GGML_CUDA=ON"), std::string::npos);
  EXPECT_NE(w[0].find("--llama-dir"), std::string::npos);
  EXPECT_TRUE(EngineWarnings(info, false).empty());

  info.devices.push_back({"CUDA0", "NVIDIA H200", Bytes::GiB(139), Bytes::GiB(138)});
  EXPECT_TRUE(EngineWarnings(info, true).empty());
}

TEST(EngineWarningsTest, MissingNcmoeIsReported) {
  EngineInfo info;
  info.bench_flags = {"-ngl"};
  const auto w = EngineWarnings(info, false);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("-ncmoe"), std::string::npos);
}

TEST(EngineDiscoveryTest, BadLlamaDirIsAClearError) {
  DiscoveryOptions o;
  o.llama_dir = "/nonexistent/llama.cpp";
  auto r = DiscoverEngine(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(r.error().message().find("/nonexistent/llama.cpp"), std::string::npos);
}

TEST(EngineDiscoveryTest, LlamaDirAcceptsBuildTree) {
  const fs::path dir = fs::path(::testing::TempDir()) / "moetune_llama_tree";
  fs::remove_all(dir);
  fs::create_directories(dir / "build" / "bin");
  const fs::path bench = dir / "build" / "bin" / "llama-bench";
  std::ofstream(bench) << "#!/bin/sh\nexit 0\n";
  fs::permissions(bench, fs::perms::owner_all);
  DiscoveryOptions o;
  o.llama_dir = dir.string();
  o.probe = false;
  auto r = DiscoverEngine(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->dir, fs::weakly_canonical(dir / "build" / "bin").string());
  EXPECT_EQ(r->origin, "--llama-dir");
  EXPECT_EQ(r->ToolPath("llama-bench"), bench.string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace moetune
