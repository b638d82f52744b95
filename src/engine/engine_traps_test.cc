#include "engine/engine_traps.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace moetune {
namespace {

const EngineTrap* Find(const std::vector<EngineTrap>& traps, const std::string& id) {
  for (const auto& t : traps) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

TEST(EngineTraps, CleanEnvironmentHasNone) {
  EngineTrapInputs in;
  in.root = SysRoot("/nonexistent-moetune-root");
  EXPECT_TRUE(FindEngineTraps(in).empty());
}

TEST(EngineTraps, UnifiedMemoryAndLlamaArgs) {
  EngineTrapInputs in;
  in.root = SysRoot("/nonexistent-moetune-root");
  in.env = {{"GGML_CUDA_ENABLE_UNIFIED_MEMORY", "1"},
            {"LLAMA_ARG_N_GPU_LAYERS", "20"},
            {"LLAMA_ARG_THREADS", "4"},
            {"CUDA_VISIBLE_DEVICES", "1"},
            {"PATH", "/usr/bin"}};
  const auto traps = FindEngineTraps(in);
  ASSERT_NE(Find(traps, "unified_memory"), nullptr);
  EXPECT_GE(Find(traps, "unified_memory")->impact, 90);
  const EngineTrap* args = Find(traps, "llama_arg_env");
  ASSERT_NE(args, nullptr);
  EXPECT_NE(args->detail.find("LLAMA_ARG_N_GPU_LAYERS=20"), std::string::npos);
  EXPECT_NE(args->detail.find("LLAMA_ARG_THREADS=4"), std::string::npos);
  EXPECT_NE(Find(traps, "visible_devices_CUDA_VISIBLE_DEVICES"), nullptr);
}

TEST(EngineTraps, ConfigIniUnderRootAndHome) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("moetune-traps-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "etc/llama.cpp");
  std::filesystem::create_directories(dir / "home/.config/llama.cpp");
  std::ofstream(dir / "etc/llama.cpp/config.ini") << "# comment\nn-gpu-layers = 10\n";
  std::ofstream(dir / "home/.config/llama.cpp/config.ini") << "threads = 3\n";
  EngineTrapInputs in;
  in.root = SysRoot(dir.string());
  in.env = {{"HOME", (dir / "home").string()}};
  const auto traps = FindEngineTraps(in);
  ASSERT_NE(Find(traps, "config_ini"), nullptr);
  EXPECT_NE(Find(traps, "config_ini")->detail.find("n-gpu-layers = 10"), std::string::npos);
  ASSERT_NE(Find(traps, "config_ini_user"), nullptr);
  EXPECT_NE(Find(traps, "config_ini_user")->detail.find("threads = 3"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(EngineTraps, MissingCudaBackendOnNvidiaMachine) {
  EngineProbe probe;
  probe.llama_bench = "/opt/llama/llama-bench";
  probe.ran = true;
  probe.devices = {"Vulkan0: NVIDIA GeForce RTX 4090 (24564 MiB, 23000 MiB free)"};
  probe.has_vulkan = true;
  EngineTrapInputs in;
  in.root = SysRoot("/nonexistent-moetune-root");
  in.nvidia_gpus = 1;
  in.engine = probe;
  const auto traps = FindEngineTraps(in);
  const EngineTrap* t = Find(traps, "no_cuda_backend");
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t->detail.find("Vulkan"), std::string::npos);
  // Without an NVIDIA GPU the same engine is fine.
  in.nvidia_gpus = 0;
  EXPECT_EQ(Find(FindEngineTraps(in), "no_cuda_backend"), nullptr);
}

// A CUDA build that registers no device (driver older than its runtime, a
// hidden GPU): the backend is there, so the fix is the driver, not a rebuild.
TEST(EngineTraps, CudaBackendWithoutDeviceOnNvidiaMachine) {
  EngineProbe probe;
  probe.llama_bench = "/opt/llama/build/bin/llama-bench";
  probe.ran = true;
  probe.cuda_backend = true;
  probe.backends = {"CPU", "CUDA"};
  probe.backend_source = "linked in";
  EngineTrapInputs in;
  in.root = SysRoot("/nonexistent-moetune-root");
  in.nvidia_gpus = 1;
  in.engine = probe;
  const auto traps = FindEngineTraps(in);
  EXPECT_EQ(Find(traps, "no_cuda_backend"), nullptr);
  const EngineTrap* t = Find(traps, "cuda_backend_no_device");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->impact, 100);
  EXPECT_NE(t->detail.find("linked in"), std::string::npos) << t->detail;
  EXPECT_NE(t->detail.find("no devices at all"), std::string::npos) << t->detail;
  EXPECT_NE(t->fix.find("nvidia-smi"), std::string::npos) << t->fix;
  // With its device listed there is nothing to say.
  probe.devices = {"CUDA0: NVIDIA GeForce RTX 4070 (12282 MiB, 11000 MiB free)"};
  probe.has_cuda = true;
  in.engine = probe;
  EXPECT_EQ(Find(FindEngineTraps(in), "cuda_backend_no_device"), nullptr);
}

TEST(EngineTraps, UnusableEngineIsAVerdictWithItsReason) {
  EngineProbe probe;
  probe.note = "MOETUNE_LLAMA_DIR='/nowhere' holds no executable llama-bench";
  EngineTrapInputs in;
  in.root = SysRoot("/nonexistent-moetune-root");
  in.engine = probe;
  const EngineTrap* t = Find(FindEngineTraps(in), "engine_unavailable");
  ASSERT_NE(t, nullptr);
  EXPECT_NE(t->detail.find("/nowhere"), std::string::npos);
  EXPECT_NE(t->fix.find("setup-engine.sh"), std::string::npos);
  probe.ran = true;
  in.engine = probe;
  EXPECT_EQ(Find(FindEngineTraps(in), "engine_unavailable"), nullptr);
}

}  // namespace
}  // namespace moetune
