#include "engine/linked_backends.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "util/elf_test_util.h"
#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;
using testing::BuildElf;
using testing::ElfSpec;

void Write(const std::string& path, const ElfSpec& spec) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << BuildElf(spec);
}

TEST(LinkedBackendsTest, NamesOfLibrariesSymbolsAndDevices) {
  EXPECT_EQ(BackendOfLibrary("libggml-cuda.so.0"), "CUDA");
  EXPECT_EQ(BackendOfLibrary("libggml-cpu.so"), "CPU");
  EXPECT_EQ(BackendOfLibrary("libggml-cpu-haswell.so"), "CPU");
  EXPECT_EQ(BackendOfLibrary("libggml-vulkan.so"), "Vulkan");
  EXPECT_EQ(BackendOfLibrary("libggml-hip.so"), "ROCm");
  EXPECT_EQ(BackendOfLibrary("libggml-base.so.0"), "");
  EXPECT_EQ(BackendOfLibrary("libggml.so.0"), "");
  EXPECT_EQ(BackendOfLibrary("libggml-cudart.so"), "");
  EXPECT_EQ(BackendOfRegSymbol("ggml_backend_cuda_reg"), "CUDA");
  EXPECT_EQ(BackendOfRegSymbol("ggml_backend_vk_reg"), "Vulkan");
  EXPECT_EQ(BackendOfRegSymbol("ggml_backend_reg_count"), "");
  EXPECT_EQ(BackendOfRegSymbol("ggml_backend__reg"), "");
  EXPECT_EQ(BackendOfDevice("CUDA0"), "CUDA");
  EXPECT_EQ(BackendOfDevice("RPC0"), "RPC");
  EXPECT_EQ(BackendOfDevice("RPC1[127.0.0.1:50052]"), "RPC");
  EXPECT_EQ(BackendOfDevice("Vulkan12"), "Vulkan");
  EXPECT_EQ(BackendOfDevice("MTL0"), "MTL");
  EXPECT_EQ(BackendOfDevice("CUDA"), "");
  EXPECT_EQ(BackendOfDevice("CUDAx0"), "");
}

// A shared build as cmake lays it out (-DGGML_CUDA=ON -DGGML_RPC=ON): the tool
// needs libllama, which needs libggml, which needs the backends, all found
// through $ORIGIN.
TEST(LinkedBackendsTest, SharedBuildClosure) {
  testing::TempDir dir;
  const std::string bin = dir.File("build/bin");
  ElfSpec tool;
  tool.needed = {"libllama.so.0", "libggml.so.0", "libc.so.6"};
  tool.run_path = "$ORIGIN";
  Write(bin + "/llama-bench", tool);
  ElfSpec llama;
  llama.needed = {"libggml.so.0", "libggml-base.so.0"};
  llama.run_path = "${ORIGIN}";
  Write(bin + "/libllama.so.0", llama);
  ElfSpec ggml;
  ggml.needed = {"libggml-cpu.so.0", "libggml-cuda.so.0", "libggml-rpc.so.0", "libggml-base.so.0"};
  ggml.run_path = "$ORIGIN";
  Write(bin + "/libggml.so.0", ggml);
  const LinkedBackends b = FindLinkedBackends(bin + "/llama-bench");
  EXPECT_EQ(b.backends, (std::vector<std::string>{"CPU", "CUDA", "RPC"}));
  EXPECT_EQ(b.evidence, (std::vector<std::string>{"libggml-cpu.so.0", "libggml-cuda.so.0",
                                                  "libggml-rpc.so.0"}));
}

// Libraries in a lib/ folder beside bin/ (an installed tree: RUNPATH $ORIGIN/../lib).
TEST(LinkedBackendsTest, RunPathRelativeToTheObject) {
  testing::TempDir dir;
  ElfSpec tool;
  tool.needed = {"libggml.so"};
  tool.run_path = "$ORIGIN/../lib";
  Write(dir.File("bin/llama-server"), tool);
  ElfSpec ggml;
  ggml.needed = {"libggml-vulkan.so"};
  Write(dir.File("lib/libggml.so"), ggml);
  const LinkedBackends b = FindLinkedBackends(dir.File("bin/llama-server"));
  EXPECT_EQ(b.backends, std::vector<std::string>{"Vulkan"});
}

TEST(LinkedBackendsTest, StaticBuildBySymbols) {
  testing::TempDir dir;
  ElfSpec tool;
  tool.dynamic = false;
  tool.symbols = {"ggml_backend_cpu_reg", "ggml_backend_cuda_reg", "ggml_backend_reg_count"};
  Write(dir.File("llama-bench"), tool);
  const LinkedBackends b = FindLinkedBackends(dir.File("llama-bench"));
  EXPECT_EQ(b.backends, (std::vector<std::string>{"CPU", "CUDA"}));
  EXPECT_EQ(b.evidence, std::vector<std::string>{"llama-bench"});
}

// A dynamically loading build links no backend, and a wrapper script is no
// evidence either way: nothing is claimed.
TEST(LinkedBackendsTest, DynamicBuildsAndScriptsShowNone) {
  testing::TempDir dir;
  ElfSpec tool;
  tool.needed = {"libllama.so.0"};
  tool.run_path = "$ORIGIN";
  Write(dir.File("llama-bench"), tool);
  ElfSpec llama;
  llama.needed = {"libggml.so.0"};
  Write(dir.File("libllama.so.0"), llama);
  ElfSpec ggml;
  ggml.needed = {"libggml-base.so.0"};
  ggml.symbols = {"ggml_backend_load_all"};
  Write(dir.File("libggml.so.0"), ggml);
  EXPECT_TRUE(FindLinkedBackends(dir.File("llama-bench")).backends.empty());
  std::ofstream(dir.File("wrapper")) << "#!/bin/sh\nexec ld.so llama-bench \"$@\"\n";
  EXPECT_TRUE(FindLinkedBackends(dir.File("wrapper")).backends.empty());
  EXPECT_TRUE(FindLinkedBackends(dir.File("missing")).backends.empty());
}

// A library that needs itself (or a cycle) ends the walk.
TEST(LinkedBackendsTest, CyclesEnd) {
  testing::TempDir dir;
  ElfSpec a;
  a.needed = {"libggml-a.so", "libggml-cpu.so"};
  a.run_path = "$ORIGIN";
  Write(dir.File("llama-bench"), a);
  ElfSpec lib;
  lib.needed = {"libggml-a.so"};
  lib.run_path = "$ORIGIN";
  Write(dir.File("libggml-a.so"), lib);
  EXPECT_EQ(FindLinkedBackends(dir.File("llama-bench")).backends, std::vector<std::string>{"CPU"});
}

}  // namespace
}  // namespace moetune
