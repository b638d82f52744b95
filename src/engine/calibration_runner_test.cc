#include "engine/calibration_runner.h"

#include <gtest/gtest.h>

#include "speed/speed_test_util.h"

namespace moetune {
namespace {

// Qwen3-30B-A3B's shape: 48 full-attention layers, 4 KV heads of 128: an f16
// cache of 48 x 2 x 512 x 2 bytes = 96 KiB per cell.
constexpr int64_t kMiB = int64_t{1} << 20;

MachineSpec CpuWithLlc(int64_t llc) {
  MachineSpec s = PresetMachine("no-gpu");
  s.cpu.llc_bytes = llc;
  return s;
}

TEST(CalibrationRunnerTest, DeepDepthPutsTheKvCacheBeyondTheLlc) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const SpeedModel sm(m, CpuWithLlc(32 * kMiB));
  // 1.5 x 32 MiB / 96 KiB = 512 cells, rounded up to 1024.
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), sm.machine()), 1024);
  // 1.5 x 1 GiB / 96 KiB = 16384 cells.
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), CpuWithLlc(1024 * kMiB)), 16384);
  // Unknown LLC, or one the cache cannot pass within 32768 cells: no deep run.
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), CpuWithLlc(0)), 0);
  EXPECT_EQ(DeepDecodeDepth(sm.shape(), CpuWithLlc(4096 * kMiB)), 0);
}

TEST(CalibrationRunnerTest, AddsOneDeepDecodeRunOnlyBeyondTheShallowDepth) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  CalibrationRunOptions o;
  // A big model's cache passes a 32 MiB LLC before depth 2048: no extra run.
  const auto plain = CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(32 * kMiB)), o);
  for (const auto& c : plain) EXPECT_LE(c.n_depth, o.depth);
  // With a 1 GiB LLC the deep run is decode only, at 16384, at most 2 repetitions.
  const auto deep = CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(1024 * kMiB)), o);
  ASSERT_EQ(deep.size(), plain.size() + 1);
  const RunConfig& d = deep.back();
  EXPECT_EQ(d.n_depth, 16384);
  EXPECT_EQ(d.n_prompt, 0);
  EXPECT_EQ(d.n_gen, o.n_gen);
  EXPECT_EQ(d.placement.n_gpu_layers, 0);
  EXPECT_LE(d.repetitions, 2);
  // An explicit depth wins; -1 turns the run off.
  o.deep_depth = 8192;
  EXPECT_EQ(CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(0)), o).back().n_depth, 8192);
  o.deep_depth = -1;
  EXPECT_EQ(CalibrationConfigs("m.gguf", SpeedModel(m, CpuWithLlc(1024 * kMiB)), o).size(),
            plain.size());
}

}  // namespace
}  // namespace moetune
