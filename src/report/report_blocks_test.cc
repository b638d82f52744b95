#include "report/report_blocks.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(ReportBlocks, CpuExpertsTextSaysWhatThePlacementKeepsOnTheCpu) {
  Placement p;
  EXPECT_EQ(CpuExpertsText(p), "none");
  p.n_cpu_moe = 13;
  EXPECT_EQ(CpuExpertsText(p), "layers 0-12 (--n-cpu-moe 13)");
  p.n_cpu_moe = 1;
  EXPECT_EQ(CpuExpertsText(p), "layer 0 (--n-cpu-moe 1)");
  // llama.cpp's fit: -ot rules for the last layers, no --n-cpu-moe.
  Placement fit;
  fit.overrides = {ExpertLayersRule({14, 15, 16, 20})};
  EXPECT_EQ(CpuExpertsText(fit, "fit's -ot"), "layers 14-16, 20 (fit's -ot)");
  fit.n_cpu_moe = 2;
  fit.fine_fill = {{2, {"ffn_up_exps"}}};
  fit.overrides.push_back({"token_embd", "CPU"});
  EXPECT_EQ(CpuExpertsText(fit),
            "layers 0-1, 14-16, 20 (--n-cpu-moe 2 and -ot); part of layer 2 (-ot); 1 other -ot "
            "rule");
  Placement all;
  all.all_cpu_moe = true;
  all.n_cpu_moe = -1;
  EXPECT_EQ(CpuExpertsText(all), "every layer (--cpu-moe)");
}

}  // namespace
}  // namespace moetune
