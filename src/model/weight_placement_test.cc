// WeightPlacement: llama.cpp's split of layers over devices, -ot rules by
// pattern and the routed experts kept in host memory.
#include "model/weight_placement.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

std::vector<int> Devices(const WeightPlacement& p, int n_layer) {
  std::vector<int> out;
  for (int il = 0; il <= n_layer; ++il) out.push_back(p.LayerDevice(il, n_layer));
  return out;
}

TEST(WeightPlacement, WholeLayerCountsLandExactlyWithTheOutputOnTheLast) {
  // llama-fit-params over two RPC devices, 8 layers, -ngl 99: -ts 3,6 puts
  // layers 0-2 on RPC0 and 3-7 with the output on RPC1 (KV 12 and 20 MiB).
  WeightPlacement p;
  p.has_device = true;
  p.n_gpu_layers = 99;
  p.split = {3, 6};
  EXPECT_EQ(Devices(p, 8), (std::vector<int>{0, 0, 0, 1, 1, 1, 1, 1, 1}));
  p.split = {7, 2};
  EXPECT_EQ(Devices(p, 8), (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 1, 1}));
  // Equal shares (llama.cpp's default for devices with the same free memory):
  // 5 + 3 layers, as the engine reported (KV 20 and 12 MiB).
  p.split = {1, 1};
  EXPECT_EQ(Devices(p, 8), (std::vector<int>{0, 0, 0, 0, 0, 1, 1, 1, 1}));
  // Three devices.
  p.split = {2, 3, 4};
  EXPECT_EQ(Devices(p, 8), (std::vector<int>{0, 0, 1, 1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(p.DeviceCount(), 3);
}

TEST(WeightPlacement, PartialOffloadSplitsOnlyTheOffloadedSlots) {
  WeightPlacement p;
  p.has_device = true;
  p.n_gpu_layers = 4;  // the output and the last 3 layers
  p.split = {1, 1};
  EXPECT_EQ(Devices(p, 8), (std::vector<int>{-1, -1, -1, -1, -1, 0, 0, 1, 1}));
  p.has_device = false;
  EXPECT_EQ(p.DeviceCount(), 0);
  EXPECT_EQ(p.LayerDevice(7, 8), kHostDevice);
}

TEST(WeightPlacement, RulesAndExpertsOnTheHost) {
  WeightPlacement p;
  p.has_device = true;
  p.n_gpu_layers = 99;
  p.split = {4, 5};
  p.n_cpu_moe = 1;
  p.n_cpu_moe_last = 2;
  ASSERT_TRUE(
      p.SetRules({{"blk\\.4\\.ffn_(up|down|gate)_exps", kHostDevice}, {"blk\\.5\\.attn_q", 0}})
          .ok());
  const auto experts = [&](int il) {
    return p.TensorDevice("blk." + std::to_string(il) + ".ffn_up_exps.weight", il, 8,
                          TensorRole::kRoutedExperts);
  };
  EXPECT_EQ(experts(0), kHostDevice);  // --n-cpu-moe 1
  EXPECT_EQ(experts(1), 0);
  EXPECT_EQ(experts(4), kHostDevice);  // the rule
  EXPECT_EQ(experts(5), 1);
  EXPECT_EQ(experts(6), kHostDevice);  // the last two layers
  EXPECT_EQ(experts(7), kHostDevice);
  // A rule may send a tensor to another device than its layer's.
  EXPECT_EQ(p.TensorDevice("blk.5.attn_q.weight", 5, 8, TensorRole::kAttention), 0);
  EXPECT_EQ(p.TensorDevice("blk.5.attn_k.weight", 5, 8, TensorRole::kAttention), 1);
  // The input layer stays on the CPU, the output goes with the last slot.
  EXPECT_EQ(p.TensorDevice("token_embd.weight", -1, 8, TensorRole::kTokenEmbedding), kHostDevice);
  EXPECT_EQ(p.TensorDevice("output.weight", -1, 8, TensorRole::kOutput), 1);
}

TEST(WeightPlacement, BadRulesAreRefusedByName) {
  WeightPlacement p;
  p.has_device = true;
  p.split = {1, 1};
  auto bad = p.SetRules({{"blk\\.(1", kHostDevice}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("blk\\.(1"), std::string::npos);
  auto far = p.SetRules({{"blk", 5}});
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message().find("device 5"), std::string::npos);
  EXPECT_TRUE(p.rules().empty());
}

}  // namespace
}  // namespace moetune
