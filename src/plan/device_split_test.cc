// Placement across devices: every device fits its own budget, no device can
// take back one more layer's experts, and the split beats the usual manual
// form (-ts by free memory with --n-cpu-moe), which overflows the last device.
#include "plan/device_split.h"

#include <gtest/gtest.h>

#include "model/models_test_util.h"

namespace moetune {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

struct Fixture {
  GgufModel gguf;
  ModelArch arch;
  WeightMap wm;
  PlanRequest req;
};

Fixture Load(const std::string& preset = "qwen3moe") {
  Fixture f;
  f.gguf = SynthHeaderModel(preset, "full");  // qwen3moe: the Qwen3-30B-A3B shape
  auto a = AnalyzeArchitecture(f.gguf);
  EXPECT_TRUE(a.ok());
  f.arch = *a;
  f.wm = ComputeWeightMap(f.gguf, f.arch);
  f.req.ctx.n_ctx = 16384;
  f.req.ctx.reserve_outputs = ReserveOutputs::kPerSequence;
  return f;
}

std::vector<DeviceBudget> TwoCards() {
  return {{"CUDA0", 10 * kGiB, 0, DeviceKind::kCuda}, {"CUDA1", 6 * kGiB, 0, DeviceKind::kCuda}};
}

std::vector<std::string> Names(const std::vector<DeviceBudget>& d) {
  std::vector<std::string> out;
  out.reserve(d.size());
  for (const auto& x : d) out.push_back(x.name);
  return out;
}

// The memory map of a placement written as llama-server flags.
PlacementOption MemoryOf(const Fixture& f, const std::vector<DeviceBudget>& devs,
                         const Placement& placement, const std::vector<int64_t>& free = {}) {
  ServerConfig c;
  c.placement = placement;
  auto wp = WeightPlacementOf(c, Names(devs), free);
  EXPECT_TRUE(wp.ok()) << wp.error().message();
  auto o = EvaluatePlacement(f.gguf, f.arch, f.wm, f.req.ctx, *wp, {DeviceKind::kCuda});
  EXPECT_TRUE(o.ok());
  return o.ok() ? *o : PlacementOption{};
}

// Each device's headroom for a placement written as llama-server flags.
std::vector<int64_t> Headroom(const Fixture& f, const std::vector<DeviceBudget>& devs,
                              const Placement& placement, const std::vector<int64_t>& free = {}) {
  const PlacementOption o = MemoryOf(f, devs, placement, free);
  std::vector<int64_t> h;
  for (size_t d = 0; d < devs.size(); ++d)
    h.push_back(devs[d].budget() - f.req.margin - o.devices[d].total());
  return h;
}

TEST(PlanAcrossDevices, EveryDeviceFitsAndNoneCanTakeBackALayersExperts) {
  const Fixture f = Load();
  const auto devs = TwoCards();
  auto s = PlanAcrossDevices(f.gguf, f.arch, f.wm, f.req, devs);
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(s->fits);
  const int n = static_cast<int>(f.wm.layers.size());
  ASSERT_EQ(s->layers.size(), 2u);
  EXPECT_EQ(s->layers[0] + s->layers[1], n);
  EXPECT_FALSE(s->cpu_expert_layers.empty()) << "the model does not fit 16 GB whole";
  // The exact memory map of the printed flags agrees with the plan's.
  const Placement p = DeviceSplitPlacement(*s, devs);
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[1].layers, s->layers[1] + 1) << "the last -ts count holds the output";
  const auto h = Headroom(f, devs, p);
  EXPECT_EQ(h, s->headroom);
  for (int64_t x : h) EXPECT_GE(x, 0);
  // One layer's experts fewer on the CPU, on either device, overflows one.
  int start = 0;
  for (size_t d = 0; d < 2; ++d) {
    std::vector<int> cpu;
    for (int l : s->cpu_expert_layers)
      if (l >= start && l < start + s->layers[d]) cpu.push_back(l);
    start += s->layers[d];
    if (cpu.empty()) continue;
    DeviceSplitPlan fewer = *s;
    std::erase(fewer.cpu_expert_layers, cpu.back());
    const auto hf = Headroom(f, devs, DeviceSplitPlacement(fewer, devs));
    EXPECT_TRUE(hf[0] < 0 || hf[1] < 0) << "device " << d << " had room for one more layer";
  }
}

TEST(PlanAcrossDevices, BeatsTheManualSplitThatOverflowsTheLastDevice) {
  const Fixture f = Load();
  const auto devs = TwoCards();
  const std::vector<int64_t> free = {devs[0].free, devs[1].free};
  const int n = static_cast<int>(f.wm.layers.size());
  // llama.cpp's default split by free memory with --n-cpu-moe N: the smallest
  // N whose total fits both budgets together still overflows the last device,
  // which keeps every one of its layers' experts.
  int total_fit = -1;
  for (int k = 0; k <= n && total_fit < 0; ++k) {
    Placement p;
    p.n_cpu_moe = k;
    const auto h = Headroom(f, devs, p, free);
    if (h[0] + h[1] >= 0) total_fit = k;
  }
  ASSERT_GT(total_fit, 0);
  Placement naive;
  naive.n_cpu_moe = total_fit;
  const auto h = Headroom(f, devs, naive, free);
  EXPECT_LT(h[1], 0) << "the last device was expected to overflow";
  EXPECT_GT(h[0], 0);
  // The plan keeps fewer layers' experts on the CPU than that, and fits.
  auto s = PlanAcrossDevices(f.gguf, f.arch, f.wm, f.req, devs);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->fits);
  EXPECT_LE(static_cast<int>(s->cpu_expert_layers.size()), total_fit);
}

// The order of the devices (-dev) moves the output head to the last one: the
// plan takes another order than the engine's only when it keeps more layers'
// experts on the devices, and says why.
TEST(PlanDeviceOrder, TakesAnotherOrderOnlyWhenItHoldsMore) {
  const Fixture f = Load();
  int changed = 0;
  int64_t changed_at = 0;
  for (int64_t quarter = 8; quarter <= 40; ++quarter) {
    const std::vector<DeviceBudget> devs = {{"CUDA0", quarter * kGiB / 4, 0, DeviceKind::kCuda},
                                            {"CUDA1", 6 * kGiB, 0, DeviceKind::kCuda}};
    PlanRequest req = f.req;
    req.devices = devs;
    auto engine = PlanAcrossDevices(f.gguf, f.arch, f.wm, req, devs);
    auto swapped = PlanAcrossDevices(f.gguf, f.arch, f.wm, req, {devs[1], devs[0]});
    auto ordered = PlanDeviceOrder(f.gguf, f.arch, f.wm, req);
    ASSERT_TRUE(engine.ok() && swapped.ok() && ordered.ok());
    const size_t best =
        std::min(engine->cpu_expert_layers.size(), swapped->cpu_expert_layers.size());
    EXPECT_EQ(ordered->plan.cpu_expert_layers.size(), best) << quarter << " quarters";
    if (ordered->devices.front().name == "CUDA1") {
      ++changed;
      changed_at = quarter;
      EXPECT_LT(swapped->cpu_expert_layers.size(), engine->cpu_expert_layers.size());
      EXPECT_NE(ordered->why.find("-dev CUDA1,CUDA0"), std::string::npos) << ordered->why;
    } else {
      EXPECT_EQ(ordered->why, "");
      EXPECT_EQ(ordered->plan.cpu_expert_layers, engine->cpu_expert_layers);
    }
  }
  // Somewhere in the range the head's place decides a layer.
  ASSERT_GT(changed, 0);
  // The plan's command carries the order it chose, and its notes say why.
  PlanRequest req = f.req;
  req.SetDevices({{"CUDA0", changed_at * kGiB / 4, 0, DeviceKind::kCuda},
                  {"CUDA1", 6 * kGiB, 0, DeviceKind::kCuda}});
  auto plan = PlanPlacement(f.gguf, f.arch, f.wm, req);
  ASSERT_TRUE(plan.ok() && plan->config.has_value());
  ASSERT_EQ(plan->config->placement.devices.size(), 2u);
  EXPECT_EQ(plan->config->placement.devices.front().device, "CUDA1");
  EXPECT_EQ(plan->shares.front().device.name, "CUDA1");
  EXPECT_TRUE(std::any_of(plan->notes.begin(), plan->notes.end(), [](const std::string& n) {
    return n.find("-dev CUDA1,CUDA0") != std::string::npos;
  }));
  // Devices of two kinds keep llama.cpp's order (tune measures the others).
  req = f.req;
  req.devices = {{"RPC0", 6 * kGiB, 0, DeviceKind::kRpc},
                 {"CUDA0", 10 * kGiB, 0, DeviceKind::kCuda}};
  auto mixed = PlanDeviceOrder(f.gguf, f.arch, f.wm, req);
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->devices.front().name, "RPC0");
  EXPECT_EQ(mixed->why, "");
}

TEST(PlanAcrossDevices, ThreeDevicesAndNothingFits) {
  const Fixture f = Load();
  std::vector<DeviceBudget> three = {{"CUDA0", 12 * kGiB, 0, DeviceKind::kCuda},
                                     {"CUDA1", 8 * kGiB, 0, DeviceKind::kCuda},
                                     {"RPC0", 6 * kGiB, 0, DeviceKind::kRpc}};
  auto s = PlanAcrossDevices(f.gguf, f.arch, f.wm, f.req, three);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->fits);
  EXPECT_EQ(s->layers.size(), 3u);
  for (int64_t x : s->headroom) EXPECT_GE(x, 0);
  // Two tiny cards cannot hold even the attention and KV of every layer.
  std::vector<DeviceBudget> tiny = {{"CUDA0", kGiB, 0, DeviceKind::kCuda},
                                    {"CUDA1", kGiB, 0, DeviceKind::kCuda}};
  auto none = PlanAcrossDevices(f.gguf, f.arch, f.wm, f.req, tiny);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->fits);
  ASSERT_FALSE(none->notes.empty());
  EXPECT_NE(none->notes.front().find("nothing fits"), std::string::npos);
  // One device is not a split.
  EXPECT_FALSE(PlanAcrossDevices(f.gguf, f.arch, f.wm, f.req, {three[0]}).ok());
}

// Every expert on the devices: no -ot, so llama.cpp runs the split with
// pipeline parallelism and its larger compute buffers, which the plan's
// headroom counts (an -ot rule, even one matching nothing, would turn it off).
TEST(PlanAcrossDevices, EveryExpertOnTheDevicesCountsPipelineParallelism) {
  const Fixture f = Load();
  const std::vector<DeviceBudget> devs = {{"CUDA0", 14 * kGiB, 0, DeviceKind::kCuda},
                                          {"CUDA1", 14 * kGiB, 0, DeviceKind::kCuda}};
  auto s = PlanAcrossDevices(f.gguf, f.arch, f.wm, f.req, devs);
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(s->fits);
  EXPECT_TRUE(s->cpu_expert_layers.empty());
  const Placement p = DeviceSplitPlacement(*s, devs);
  EXPECT_TRUE(p.overrides.empty());
  EXPECT_EQ(Headroom(f, devs, p), s->headroom);
  Placement no_pipeline = p;
  no_pipeline.overrides.push_back({"matches_nothing", "CPU"});
  const PlacementOption with = MemoryOf(f, devs, p), without = MemoryOf(f, devs, no_pipeline);
  for (size_t d = 0; d < devs.size(); ++d)
    EXPECT_GT(with.devices[d].compute, without.devices[d].compute) << d;
}

// A dense model: whole layers only, and never an -ot rule for experts it does
// not have (it would match no tensor and only turn pipeline parallelism off).
TEST(PlanAcrossDevices, DenseModelsCarryNoExpertRule) {
  const Fixture f = Load("llama");
  for (const int64_t each : {2 * kGiB, kGiB + kGiB / 4}) {
    const std::vector<DeviceBudget> devs = {{"CUDA0", each, 0, DeviceKind::kCuda},
                                            {"CUDA1", each, 0, DeviceKind::kCuda}};
    auto s = PlanAcrossDevices(f.gguf, f.arch, f.wm, f.req, devs);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ(s->fits, each == 2 * kGiB) << each;
    EXPECT_TRUE(s->cpu_expert_layers.empty()) << each;
    EXPECT_TRUE(DeviceSplitPlacement(*s, devs).overrides.empty()) << each;
    EXPECT_EQ(Headroom(f, devs, DeviceSplitPlacement(*s, devs)), s->headroom) << each;
  }
}

}  // namespace
}  // namespace moetune
