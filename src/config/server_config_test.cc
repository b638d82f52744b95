#include "config/server_config.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(CpuExpertsOf, ReadsTheTypedPlacement) {
  Placement first;
  first.n_cpu_moe = 3;
  EXPECT_EQ(CpuExpertsOf(first).layers, (std::vector<int>{0, 1, 2}));
  EXPECT_FALSE(CpuExpertsOf(first).from_ot);
  Placement last;
  last.cpu_experts = CpuExpertsFrom::kLast;
  last.n_cpu_moe = 2;
  last.n_layer = 10;
  EXPECT_EQ(CpuExpertsOf(last).layers, (std::vector<int>{8, 9}));
  EXPECT_TRUE(CpuExpertsOf(last).from_ot);
  Placement all;
  all.all_cpu_moe = true;
  all.n_cpu_moe = -1;
  EXPECT_TRUE(CpuExpertsOf(all).all);
  EXPECT_TRUE(CpuExpertsOf(all).layers.empty());
  EXPECT_TRUE(CpuExpertsOf(Placement{}).layers.empty());
}

TEST(CpuExpertsOf, ReadsBackTheRuleOfExpertLayers) {
  // The rule the last-N placement writes is the one ExpertLayersRule writes.
  Placement last;
  last.cpu_experts = CpuExpertsFrom::kLast;
  last.n_cpu_moe = 3;
  last.n_layer = 24;
  ASSERT_EQ(last.Rules().size(), 1u);
  EXPECT_EQ(last.Rules().front(), ExpertLayersRule({21, 22, 23}));
  EXPECT_EQ(ExpertLayersRule({21, 22}).pattern,
            "blk\\.(21|22)\\.ffn_(up|down|gate|gate_up)_(ch|)exps");
  // Given as -ot (as llama.cpp's fit is measured), with --n-cpu-moe 0.
  Placement fit;
  fit.overrides = {ExpertLayersRule({14, 15, 16}), {"token_embd", "CPU"}};
  fit.fine_fill = {{12, {"ffn_up_exps"}}};
  const CpuExperts e = CpuExpertsOf(fit);
  EXPECT_EQ(e.layers, (std::vector<int>{14, 15, 16}));
  EXPECT_TRUE(e.from_ot);
  EXPECT_EQ(e.partial, (std::vector<int>{12}));
  ASSERT_EQ(e.unread.size(), 1u);
  EXPECT_EQ(e.unread.front().pattern, "token_embd");
  // Rules that only look alike are not read as expert layers.
  for (const char* pattern :
       {"blk\\.(1|x)\\.ffn_(up|down|gate|gate_up)_(ch|)exps", "blk\\.(1|2)\\.ffn_up_exps",
        "blk\\.()\\.ffn_(up|down|gate|gate_up)_(ch|)exps"}) {
    Placement p;
    p.overrides = {{pattern, "CPU"}};
    EXPECT_TRUE(CpuExpertsOf(p).layers.empty()) << pattern;
    EXPECT_EQ(CpuExpertsOf(p).unread.size(), 1u) << pattern;
  }
  Placement gpu;
  gpu.overrides = {{ExpertLayersRule({1}).pattern, "CUDA0"}};
  EXPECT_TRUE(CpuExpertsOf(gpu).layers.empty());
}

}  // namespace
}  // namespace moetune
