// The public reference points of docs/speed-model.md ("Sanity anchors"): the
// speed model with a matching what-if machine must land within a factor of 1.5
// of each published figure, with its default constants.
#include <gtest/gtest.h>

#include <cmath>

#include "speed/speed_test_util.h"

namespace moetune {
namespace {

struct Anchor {
  const char* what;
  const char* preset;
  SynthQuant quant;
  const char* machine;
  const char* ram_bw;  // "" = the preset's
  const char* cpu;     // "" = the preset's
  int n_cpu_moe;
  int threads;
  bool prefill;
  int tokens;  // n_prompt or n_gen
  int ubatch;
  bool pinned;
  double published;  // tokens/s
};

const Anchor kAnchors[] = {
    {"Qwen3-30B-A3B Q4_K_M, RTX 2080 8 GB, quad-channel DDR4 ~102 GB/s, -ncmoe 36, decode",
     "qwen3moe", SynthQuant::kQ4_K_M, "rtx2080-8g,ddr4-3200-4ch", "102GB/s", "10C/smt2", 36, 10,
     false, 128, 512, false, 36.7},
    {"Qwen3.6-35B-A3B Q6, RTX 5070 Ti 16 GB, -ncmoe 27, decode", "qwen35moe", SynthQuant::kQ6_K,
     "rtx5070ti-16g,ddr5-6000-2ch,8c16t", "", "", 27, 8, false, 128, 512, false, 52},
    {"Qwen3.6-35B-A3B Q6, RTX 5070 Ti 16 GB, -ncmoe 27, prefill", "qwen35moe", SynthQuant::kQ6_K,
     "rtx5070ti-16g,ddr5-6000-2ch,8c16t", "", "", 27, 8, true, 512, 512, false, 380},
    {"gpt-oss-120b, 2x RTX 5090, -ngl 99 -ncmoe 3, decode", "gpt-oss-120b", SynthQuant::kMxfp4,
     "2xrtx5090-32g,ddr5-6000-2ch,16c32t", "", "", 3, 16, false, 128, 512, false, 108},
    {"Qwen3-30B-A3B, Ryzen 9 7950X CPU only, pp512", "qwen3moe", SynthQuant::kQ4_K_M,
     "no-gpu,16c32t,ddr5-6000-2ch", "", "", 0, 16, true, 512, 512, false, 210},
    {"Qwen3-30B-A3B, Ryzen 9 7950X CPU only, tg128", "qwen3moe", SynthQuant::kQ4_K_M,
     "no-gpu,16c32t,ddr5-6000-2ch", "", "", 0, 16, false, 128, 512, false, 27.2},
    {"gpt-oss-20b, Ryzen 9 7950X CPU only, pp512", "gpt-oss-20b", SynthQuant::kMxfp4,
     "no-gpu,16c32t,ddr5-6000-2ch", "", "", 0, 16, true, 512, 512, false, 149},
    {"gpt-oss-20b, Ryzen 9 7950X CPU only, tg128", "gpt-oss-20b", SynthQuant::kMxfp4,
     "no-gpu,16c32t,ddr5-6000-2ch", "", "", 0, 16, false, 128, 512, false, 21.5},
    {"Qwen3-30B-A3B Q4_0-size, experts on CPU, mmap (pageable), pp512", "qwen3moe",
     SynthQuant::kQ4_K, "rtx3090-24g,ddr5-6000-2ch,16c32t", "", "", 48, 16, true, 512, 512, false,
     227},
    {"Qwen3-30B-A3B Q4_0-size, experts on CPU, no mmap (pinned), pp512", "qwen3moe",
     SynthQuant::kQ4_K, "rtx3090-24g,ddr5-6000-2ch,16c32t", "", "", 48, 16, true, 512, 512, true,
     310},
    {"GLM-4.5-Air, 32 GB VRAM, CPU experts, -ub 512, prefill", "glm4moe", SynthQuant::kQ4_K_M,
     "rtx5090-32g,ddr5-6000-2ch,16c32t", "", "", 38, 16, true, 2048, 512, false, 175},
    {"GLM-4.5-Air, 32 GB VRAM, CPU experts, -ub 2048, prefill", "glm4moe", SynthQuant::kQ4_K_M,
     "rtx5090-32g,ddr5-6000-2ch,16c32t", "", "", 38, 16, true, 2048, 2048, false, 535},
};

double Predicted(const Anchor& a) {
  const ModelInfo m = SynthModelInfo(a.preset, "full", a.quant);
  MachineSpec spec = PresetMachine(a.machine);
  if (*a.ram_bw) spec.ram.read_gbps = *ParseBandwidthGbps(a.ram_bw);
  if (*a.cpu) {
    EXPECT_TRUE(ParseCpuShape(a.cpu, &spec.cpu).ok());
  }
  const SpeedModel sm(m, spec);
  RunSettings r =
      a.prefill ? Prefill(a.n_cpu_moe, 0, a.threads, a.ubatch) : Decode(a.n_cpu_moe, 0, a.threads);
  if (a.prefill) r.n_prompt = a.tokens;
  r.pinned = a.pinned;
  const SpeedPrediction p = MustPredict(sm, r);
  EXPECT_TRUE(p.loads) << a.what << ": " << p.failure;
  return p.tokens_per_second;
}

TEST(SpeedModelAnchors, PublishedFiguresWithinFactorOneAndAHalf) {
  for (const Anchor& a : kAnchors) {
    const double predicted = Predicted(a);
    const double ratio = predicted / a.published;
    EXPECT_LT(std::fabs(std::log(ratio)), std::log(1.5))
        << a.what << ": predicted " << predicted << " t/s, published " << a.published;
  }
}

TEST(SpeedModelAnchors, RatiosOfPairedReportsWithinFactorOneAndAHalf) {
  // Pinned vs pageable host buffers: 227 -> 310 (x1.37).
  const double pinned_gain = Predicted(kAnchors[9]) / Predicted(kAnchors[8]);
  EXPECT_LT(std::fabs(std::log(pinned_gain / (310.0 / 227.0))), std::log(1.5)) << pinned_gain;
  EXPECT_GT(pinned_gain, 1.0);
  // -ub 2048 vs 512 with CPU experts: 175 -> 535 (x3.06).
  const double ub_gain = Predicted(kAnchors[11]) / Predicted(kAnchors[10]);
  EXPECT_LT(std::fabs(std::log(ub_gain / (535.0 / 175.0))), std::log(1.5)) << ub_gain;
}

TEST(SpeedModelAnchors, LinkAndMemoryPresetsMatchMeasuredFigures) {
  double pinned = 0, pageable = 0;
  PcieLinkRates(4, 16, &pinned, &pageable);
  EXPECT_GE(pinned, 24);  // PCIe 4.0 x16 host-to-device: 24-26 GB/s measured
  EXPECT_LE(pinned, 26);
  EXPECT_NEAR(pageable, 19.6, 1.0);  // pageable ~19.6 GB/s
  PcieLinkRates(5, 16, &pinned, &pageable);
  EXPECT_NEAR(pinned, 56, 2);  // PCIe 5.0 x16 ~56 GB/s
  MachineSpec s = PresetMachine("ddr4-3200-2ch");
  EXPECT_DOUBLE_EQ(s.ram.theoretical_gbps, 51.2);
  EXPECT_GE(s.ram.read_gbps, 40);  // dual-channel DDR4-3200 reads ~40-46 GB/s
  EXPECT_LE(s.ram.read_gbps, 46);
}

}  // namespace
}  // namespace moetune
