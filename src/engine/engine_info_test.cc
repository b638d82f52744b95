#include "engine/engine_info.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace moetune {
namespace {

namespace fs = std::filesystem;

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
