#include "config/server_config.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(DefaultDeviceOrder, PutsTheRpcDevicesFirstAsLlamaCppsModelDoes) {
  EXPECT_EQ(DefaultDeviceOrder({"CUDA0", "CUDA1", "RPC0", "RPC1"}),
            (std::vector<size_t>{2, 3, 0, 1}));
  EXPECT_EQ(DefaultDeviceOrder({"RPC[10.0.0.2:50052]", "Vulkan0"}), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(DefaultDeviceOrder({"CUDA0", "CUDA1"}), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(DefaultDeviceOrder({}).empty());
}

TEST(WeightPlacementOf, WithoutDevListTheLocalGpuLastHoldsTheOutputHead) {
  ServerConfig c;
  c.placement.n_gpu_layers = 99;
  // Listed GPU first, RPC second; 24 GiB and 8 GiB free.
  auto w = WeightPlacementOf(c, {"CUDA0", "RPC0"}, {int64_t{24} << 30, int64_t{8} << 30});
  ASSERT_TRUE(w.ok()) << w.error().message();
  // The model's device 0 is RPC0 (its 8 GiB share), device 1 CUDA0 with the head.
  EXPECT_EQ(w->split, (std::vector<float>{static_cast<float>(int64_t{8} << 30),
                                          static_cast<float>(int64_t{24} << 30)}));
  EXPECT_EQ(w->OutputDevice(8), 1);
  EXPECT_EQ(w->LayerDevice(0, 8), 0);
  // A -dev list keeps its own order.
  c.placement.devices = {{"CUDA0", 5}, {"RPC0", 4}};
  w = WeightPlacementOf(c, {"CUDA0", "RPC0"});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->split, (std::vector<float>{5, 4}));
  EXPECT_EQ(w->LayerDevice(0, 8), 0);
  EXPECT_EQ(w->OutputDevice(8), 1);
}

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
