// The speed model across several devices: what-if machines with different
// cards and RPC hosts, each device's own memory and rates, and the transfers
// at every boundary between devices.

#include <gtest/gtest.h>

#include "speed/speed_test_util.h"

namespace moetune {
namespace {

constexpr const char* kTwoCards = "rtx3090-24g,rtx3060-12g,ddr4-3200-2ch,8c16t";

// `n_cpu_moe` layers' experts on the CPU, the layers split as `layers` over `devices`.
RunSettings Split(RunSettings r, const std::vector<std::string>& devices,
                  const std::vector<int>& layers) {
  r.n_gpu_layers = 99;
  for (size_t i = 0; i < devices.size(); ++i) r.devices.push_back({devices[i], layers[i]});
  return r;
}

TEST(DeviceSpeed, AWhatIfListDescribesDifferentCardsInTheEnginesOrder) {
  const MachineSpec m = PresetMachine(kTwoCards);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[0].vram_total, int64_t{24} << 30);
  EXPECT_EQ(m.devices[1].vram_total, int64_t{12} << 30);
  EXPECT_DOUBLE_EQ(m.devices[1].mem_bw_gbps, 360);
  EXPECT_EQ(m.DeviceNames(), (std::vector<std::string>{"CUDA0", "CUDA1"}));
  // One GPU preset alone still replaces the machine's GPU (a profile's card).
  MachineSpec one = m;
  ASSERT_TRUE(ApplyMachinePresets("rtx4070-12g", &one).ok());
  ASSERT_EQ(one.devices.size(), 1u);
  // Identical cards by count are single devices of their own.
  const MachineSpec twins = PresetMachine("2xrtx3090-24g");
  EXPECT_EQ(twins.SingleDevices().size(), 2u);
  EXPECT_EQ(twins.SingleDevices()[1].vram_total, int64_t{24} << 30);
  // A GPU and an RPC host on the network.
  const MachineSpec rpc = PresetMachine("rtx3090-24g,ddr4-3200-2ch,8c16t,rpc-1gbe");
  ASSERT_EQ(rpc.devices.size(), 2u);
  EXPECT_EQ(rpc.DeviceNames(), (std::vector<std::string>{"CUDA0", "RPC0"}));
  EXPECT_NEAR(rpc.devices[1].net_gbps, 0.1177, 0.001);
  ASSERT_TRUE(rpc.devices[1].rpc_cpu.has_value());
  EXPECT_EQ(rpc.devices[1].rpc_cpu->p_cores, 8);
  MachineSpec bad = DefaultMachineSpec();
  EXPECT_FALSE(ApplyMachinePresets("rtx3090-24g,no-such-card", &bad).ok());
}

TEST(DeviceSpeed, EachDeviceOverflowsOnItsOwnAndTheFailureNamesIt) {
  const ModelInfo model = SynthModelInfo("qwen3moe");
  const int n_layer = static_cast<int>(model.arch.layers.size());
  MachineSpec m = PresetMachine(kTwoCards);
  m.spill = SpillMode::kStrict;
  const SpeedModel sm(model, m);
  // Every layer with its experts on the 12 GB card: it overflows, the 24 GB one is idle.
  auto lopsided = sm.Predict(Split(Decode(0), {"CUDA0", "CUDA1"}, {1, n_layer}));
  ASSERT_TRUE(lopsided.ok()) << lopsided.error().message();
  EXPECT_FALSE(lopsided->loads);
  EXPECT_NE(lopsided->failure.find("CUDA1"), std::string::npos) << lopsided->failure;
  // Two thirds on the big card, a third on the small one, experts of the
  // first layers on the CPU: both fit.
  const int big = n_layer * 2 / 3;
  auto balanced = sm.Predict(Split(Decode(n_layer / 2), {"CUDA0", "CUDA1"}, {big, n_layer - big}));
  ASSERT_TRUE(balanced.ok());
  EXPECT_TRUE(balanced->loads) << balanced->failure;
  // The same split overflows a machine whose second card is smaller.
  MachineSpec small = m;
  small.devices[1].vram_free = int64_t{1} << 30;
  auto tight = SpeedModel(model, small)
                   .Predict(Split(Decode(n_layer / 2), {"CUDA0", "CUDA1"}, {big, n_layer - big}));
  ASSERT_TRUE(tight.ok());
  EXPECT_FALSE(tight->loads);
}

TEST(DeviceSpeed, LayersOnTheSlowerCardCostItsBandwidth) {
  const ModelInfo model = SynthModelInfo("qwen3moe");
  const int n_layer = static_cast<int>(model.arch.layers.size());
  MachineSpec m = PresetMachine(kTwoCards);
  m.spill = SpillMode::kSilent;  // speeds only: no allocation fails
  for (auto& d : m.devices) d.vram_free = int64_t{1} << 40;
  const SpeedModel sm(model, m);
  const int few = n_layer / 4, many = n_layer - few;
  const auto on_fast = MustPredict(sm, Split(Decode(0), {"CUDA0", "CUDA1"}, {many, few}));
  const auto on_slow = MustPredict(sm, Split(Decode(0), {"CUDA0", "CUDA1"}, {few, many}));
  EXPECT_GT(on_fast.decode.tokens_per_second, on_slow.decode.tokens_per_second * 1.2);
  // One boundary between the cards, crossed by every token (plus the CPU's input).
  EXPECT_EQ(on_fast.handovers_per_token, 2);
  // -dev picks the order: the 3060 first holds the same many layers, but the
  // output head now goes with the last device, the faster 3090, which reads it
  // at its own bandwidth.
  const auto reversed = MustPredict(sm, Split(Decode(0), {"CUDA1", "CUDA0"}, {many, few}));
  EXPECT_GT(reversed.decode.tokens_per_second, on_slow.decode.tokens_per_second);
  EXPECT_LT(reversed.decode.tokens_per_second, on_fast.decode.tokens_per_second);
}

TEST(DeviceSpeed, ASlowNetworkToAnRpcHostCostsEveryBoundary) {
  const ModelInfo model = SynthModelInfo("qwen3moe");
  const int n_layer = static_cast<int>(model.arch.layers.size());
  auto machine = [](const char* host) {
    MachineSpec m = PresetMachine(std::string("rtx3090-24g,ddr4-3200-2ch,8c16t,") + host);
    m.spill = SpillMode::kSilent;
    return m;
  };
  const MachineSpec slow = machine("rpc-1gbe"), fast = machine("rpc-10gbe");
  const int half = n_layer / 2;
  const RunSettings run = Split(Prefill(0), {"CUDA0", "RPC0"}, {half, n_layer - half});
  const auto p1 = MustPredict(SpeedModel(model, slow), run);
  const auto p10 = MustPredict(SpeedModel(model, fast), run);
  ASSERT_TRUE(p1.loads && p10.loads);
  EXPECT_LT(p1.prefill.tokens_per_second, p10.prefill.tokens_per_second);
  // The difference is the hidden state of 512 tokens crossing the slower link
  // at each RPC boundary and the one output's logits coming back from the
  // device that holds the head.
  const double bytes = 512.0 * model.arch.hp.n_embd * 4 + model.arch.hp.n_vocab * 4.0;
  const double link = p1.prefill.per_token.at(Resource::kLink) * 512 -
                      p10.prefill.per_token.at(Resource::kLink) * 512;
  const int rpc_crossings = 1;  // CUDA0 -> RPC0, which holds the last layers and the output
  EXPECT_NEAR(link, rpc_crossings * bytes * (1 / 0.1177e9 - 1 / 1.177e9), link * 0.05);
}

TEST(DeviceSpeed, ADeviceTheMachineDoesNotHaveIsAnErrorThatNamesIt) {
  const ModelInfo model = SynthModelInfo("qwen3moe");
  const SpeedModel sm(model, PresetMachine(kTwoCards));
  auto r = sm.Predict(Split(Decode(0), {"CUDA0", "CUDA7"}, {10, 10}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("CUDA7"), std::string::npos);
  EXPECT_NE(r.error().message().find("CUDA0, CUDA1"), std::string::npos);
}

}  // namespace
}  // namespace moetune
