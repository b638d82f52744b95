#include "speed/speed_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gguf/ggml_type.h"
#include "plan/placement.h"
#include "speed/speed_test_util.h"

namespace moetune {
namespace {

// Bandwidth knobs of a machine, for the monotonicity test.
enum class Knob { kGpu, kPcie, kRam };

void Scale(MachineSpec* m, Knob k, double f) {
  switch (k) {
    case Knob::kGpu:
      m->accel()->mem_bw_gbps *= f;
      break;
    case Knob::kPcie:
      m->accel()->link_gbps *= f;
      m->accel()->link_pageable_gbps *= f;
      break;
    case Knob::kRam:
      m->ram.read_gbps *= f;
      break;
  }
}

TEST(SpeedModel, MonotoneInEveryBandwidth) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  for (Knob k : {Knob::kGpu, Knob::kPcie, Knob::kRam}) {
    for (int n : {0, 20, 30, 48}) {
      MachineSpec base = PresetMachine("rtx4090-24g,ddr5-6000-2ch,8c16t");
      base.spill = SpillMode::kSilent;  // so that every N gives numbers
      double last_pp = 0, last_tg = 0;
      for (double f : {0.5, 1.0, 1.5, 2.0, 4.0}) {
        MachineSpec spec = base;
        Scale(&spec, k, f);
        const SpeedModel sm(m, spec);
        const double pp = MustPredict(sm, Prefill(n)).tokens_per_second;
        const double tg = MustPredict(sm, Decode(n)).tokens_per_second;
        EXPECT_GE(pp, last_pp * (1 - 1e-12)) << "knob " << static_cast<int>(k) << " N=" << n;
        EXPECT_GE(tg, last_tg * (1 - 1e-12)) << "knob " << static_cast<int>(k) << " N=" << n;
        last_pp = pp;
        last_tg = tg;
      }
    }
  }
  // And each bandwidth matters where its resource is used: RAM for CPU experts
  // (dual-channel DDR4 with 16 cores: decode reads faster than the cores multiply),
  // PCIe for prefill with CPU experts, VRAM for GPU-resident weights.
  MachineSpec spec = PresetMachine("rtx4090-24g,ddr4-3200-2ch,16c32t");
  const SpeedModel slow(m, spec);
  Scale(&spec, Knob::kRam, 2);
  EXPECT_GT(MustPredict(SpeedModel(m, spec), Decode(40)).tokens_per_second,
            1.1 * MustPredict(slow, Decode(40)).tokens_per_second);
  Scale(&spec, Knob::kPcie, 2);
  EXPECT_GT(MustPredict(SpeedModel(m, spec), Prefill(40)).tokens_per_second,
            1.3 * MustPredict(slow, Prefill(40)).tokens_per_second);
  Scale(&spec, Knob::kGpu, 2);
  EXPECT_GT(MustPredict(SpeedModel(m, spec), Decode(0)).tokens_per_second,
            1.3 * MustPredict(slow, Decode(0)).tokens_per_second);
}

TEST(SpeedModel, OneMoreCpuExpertLayerIsNeverFasterForDecode) {
  for (const char* preset : {"qwen3moe", "qwen35moe", "gpt-oss-120b", "glm4moe", "mixtral"}) {
    const ModelInfo m = SynthModelInfo(preset);
    for (const char* machine :
         {"rtx4070-12g,ddr4-3200-2ch,6p8e", "h100-80g,ddr5-4800-8ch,32c64t"}) {
      MachineSpec spec = PresetMachine(machine);
      spec.accel()->vram_free = spec.accel()->vram_total = int64_t{1} << 40;  // nothing overflows
      const SpeedModel sm(m, spec);
      const int n_layer = static_cast<int>(m.arch.layers.size());
      double prev = 1e30;
      for (int n = 0; n <= n_layer; ++n) {
        const SpeedPrediction p = MustPredict(sm, Decode(n, 4096));
        ASSERT_TRUE(p.loads);
        EXPECT_LE(p.decode.tokens_per_second, prev * (1 + 1e-9))
            << preset << " on " << machine << " N=" << n;
        prev = p.decode.tokens_per_second;
      }
    }
  }
}

// Silent spill is tested against the published measurements in speed/spill_test.cc.

TEST(SpeedModel, KvTermGrowsLinearlyWithDepthOnlyForGrowingLayers) {
  for (const char* preset : {"qwen3moe", "gpt-oss-20b", "qwen35moe", "llama4"}) {
    const ModelInfo m = SynthModelInfo(preset);
    MachineSpec spec = PresetMachine("no-gpu,ddr5-6000-2ch,16c32t");
    CalibrationConstants c;
    c.cpu_attn_decode_efficiency = 1e6;  // attention reads, not FLOPs, bind here
    const SpeedModel sm(m, spec, c);
    auto t = [&](int depth) {
      return 1.0 / MustPredict(sm, Decode(0, depth, 16)).decode.tokens_per_second;
    };
    // Expected slope: K+V bytes per token of the layers whose cache grows,
    // read at the RAM rate decode reaches.
    double growing = 0;
    for (const auto& L : m.arch.layers) {
      if (!L.has_kv) continue;
      if (L.attention != AttentionKind::kFull && L.attention != AttentionKind::kMla) continue;
      growing += 2.0 * (L.n_embd_k_gqa + L.n_embd_v_gqa);  // f16
    }
    const double bw = spec.ram.read_gbps * 1e9 * c.cpu_bw_efficiency;
    // Past every window (llama4 chunks: 8192), only growing layers add time.
    const double a = t(16384), b = t(32768), d = t(49152);
    EXPECT_NEAR((b - a) / 16384, growing / bw, growing / bw * 1e-6) << preset;
    EXPECT_NEAR(d - b, b - a, (b - a) * 1e-6) << preset;
  }
  // A recurrent-only stack would not grow at all: qwen35moe grows only through
  // its 10 full-attention layers of 40.
  const ModelInfo q35 = SynthModelInfo("qwen35moe");
  int full = 0;
  for (const auto& L : q35.arch.layers) full += L.attention == AttentionKind::kFull ? 1 : 0;
  EXPECT_EQ(full, 10);
}

TEST(SpeedModel, StrictModeFailsExactlyWhereTheMemoryMapAndTheCudaRuntimeFillTheGpu) {
  for (const char* preset : {"qwen3moe", "gpt-oss-120b", "qwen35moe"}) {
    const ModelInfo m = SynthModelInfo(preset);
    for (const char* machine : {"rtx4070-12g", "rtx4090-24g", "rtx5090-32g"}) {
      MachineSpec spec = PresetMachine(machine);
      spec.reserve = int64_t{512} << 20;
      const SpeedModel sm(m, spec);
      for (int ctx : {4096, 32768}) {
        PlanRequest req;
        req.vram_free = spec.accel()->vram_free;
        req.reserve = spec.reserve;
        req.margin = 0;
        req.fine_fill = false;
        req.ctx.n_ctx = ctx;
        const Plan plan = PlanPlacement(m.gguf, m.arch, m.weights, req).value();
        for (const auto& o : plan.options) {
          RunSettings r = Prefill(o.n_cpu_moe);
          r.n_ctx = ctx;
          const SpeedPrediction p = MustPredict(sm, r);
          // llama.cpp's buffers (the memory map) plus the CUDA runtime's share.
          EXPECT_EQ(p.loads, o.gpu.total() + kCudaRuntimeBytes <= req.vram_free - req.reserve)
              << preset << " " << machine << " ctx " << ctx << " N=" << o.n_cpu_moe;
          if (!p.loads) {
            EXPECT_NE(p.failure.find("out of memory"), std::string::npos);
          }
        }
      }
    }
  }
}

TEST(SpeedModel, WithoutGpuPlacementDoesNotChangeSpeed) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const SpeedModel sm(m, PresetMachine("no-gpu,ddr4-3200-2ch,8c16t"));
  const SpeedPrediction a = MustPredict(sm, Decode(0)), b = MustPredict(sm, Decode(48));
  EXPECT_DOUBLE_EQ(a.decode.tokens_per_second, b.decode.tokens_per_second);
  EXPECT_DOUBLE_EQ(MustPredict(sm, Prefill(0)).prefill.tokens_per_second,
                   MustPredict(sm, Prefill(48)).prefill.tokens_per_second);
  EXPECT_EQ(a.handovers_per_token, 0);
  EXPECT_EQ(a.decode.binding, Resource::kRamBandwidth);
}

TEST(SpeedModel, OpOffloadNeedsThirtyTwoTokensAndPinnedMemoryCopiesFaster) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const SpeedModel sm(m, PresetMachine("rtx4090-24g,ddr5-6000-2ch,16c32t"));
  RunSettings r = Prefill(48);
  EXPECT_TRUE(MustPredict(sm, r).op_offload_active);
  const double pageable = MustPredict(sm, r).prefill.tokens_per_second;
  r.pinned = true;
  EXPECT_GT(MustPredict(sm, r).prefill.tokens_per_second, pageable * 1.2);
  r.n_ubatch = 16;
  EXPECT_FALSE(MustPredict(sm, r).op_offload_active);
  r.n_ubatch = 512;
  r.op_offload = false;
  const SpeedPrediction cpu = MustPredict(sm, r);
  EXPECT_FALSE(cpu.op_offload_active);
  EXPECT_EQ(cpu.prefill.binding, Resource::kCpuCompute);
  // Bigger micro-batches amortise the copies of the touched experts.
  RunSettings big = Prefill(48);
  big.n_prompt = 2048;
  big.n_ubatch = 2048;
  RunSettings small = big;
  small.n_ubatch = 512;
  EXPECT_GT(MustPredict(sm, big).prefill.tokens_per_second,
            2.5 * MustPredict(sm, small).prefill.tokens_per_second);
}

TEST(SpeedModel, HandoversCountSwitchesInTheLayerSequence) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  const SpeedModel sm(m, PresetMachine("rtx4090-24g"));
  // All on the GPU: the embedding lookup on the host, then the GPU.
  EXPECT_EQ(MustPredict(sm, Decode(0)).handovers_per_token, 1);
  // Each CPU-expert layer goes GPU -> CPU -> GPU.
  EXPECT_EQ(MustPredict(sm, Decode(10)).handovers_per_token, 1 + 2 * 10);
  // -ngl 0: everything on the CPU.
  RunSettings cpu = Decode(0);
  cpu.n_gpu_layers = 0;
  EXPECT_EQ(MustPredict(sm, cpu).handovers_per_token, 0);
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

// Total prefill seconds of a prediction.
double PrefillSeconds(const SpeedPrediction& p, int64_t tokens) {
  return static_cast<double>(tokens) / p.prefill.tokens_per_second;
}

TEST(SpeedModel, AHugePromptIsGroupedIntoBoundedWorkWithTheSameTime) {
  const ModelInfo m = SynthModelInfo("qwen3moe");
  // A GPU whose memory holds the KV cache of the whole 512K context: the three
  // runs share one context (and so one memory map), only the work differs.
  const SpeedModel sm(m, PresetMachine("h100-80g,ddr5-6000-2ch,8c16t"));
  // 8192 micro-batches of 64 tokens (taken in pairs) against the two halves of
  // 4096 each, every micro-batch timed on its own at its depth.
  RunSettings whole = Prefill(20, 0, 8, 64);
  whole.n_prompt = 8192 * 64;
  whole.n_ctx = whole.n_prompt;
  RunSettings first = whole, second = whole;
  first.n_prompt = second.n_prompt = 4096 * 64;
  second.n_depth = 4096 * 64;
  const double grouped = PrefillSeconds(MustPredict(sm, whole), whole.n_prompt);
  const double exact = PrefillSeconds(MustPredict(sm, first), first.n_prompt) +
                       PrefillSeconds(MustPredict(sm, second), second.n_prompt);
  EXPECT_NEAR(grouped / exact, 1.0, 0.005);
  // 2^30 tokens one at a time: a billion micro-batches before; bounded now.
  RunSettings huge = Prefill(20, 0, 8, 1);
  huge.n_prompt = 1 << 30;
  const SpeedPrediction p = MustPredict(sm, huge);
  EXPECT_TRUE(std::isfinite(p.prefill.tokens_per_second));
  // Depth plus prompt beyond int32 does not overflow.
  huge.n_depth = 2147483000;
  EXPECT_TRUE(std::isfinite(MustPredict(sm, huge).prefill.tokens_per_second));
}

}  // namespace
}  // namespace moetune
