#include "plan/placement.h"

#include <gtest/gtest.h>

#include "model/models_test_util.h"
#include "model/synth.h"

namespace moetune {
namespace {

struct Fixture {
  GgufModel gguf;
  ModelArch arch;
  WeightMap wm;
};

Fixture Load(const std::string& preset, const std::string& scale = "full") {
  Fixture f;
  f.gguf = SynthHeaderModel(preset, scale);
  auto a = AnalyzeArchitecture(f.gguf);
  EXPECT_TRUE(a.ok());
  f.arch = *a;
  f.wm = ComputeWeightMap(f.gguf, f.arch);
  return f;
}

PlanRequest Req(int64_t vram, int64_t n_ctx) {
  PlanRequest r;
  r.vram_free = vram;
  r.ctx.n_ctx = n_ctx;
  return r;
}

Plan MustPlan(const Fixture& f, const PlanRequest& r) {
  auto p = PlanPlacement(f.gguf, f.arch, f.wm, r);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
  return p.ok() ? std::move(p).value() : Plan{};
}

TEST(PlanPlacement, PicksSmallestFittingNAndGpuShrinksWithN) {
  Fixture f = Load("qwen35moe");  // ~20 GiB at Q4_K_M
  Plan p = MustPlan(f, Req(12LL << 30, 32768));
  ASSERT_TRUE(p.moe);
  ASSERT_EQ(p.options.size(), 41u);  // N = 0..40
  ASSERT_TRUE(p.smallest_fitting.has_value());
  const auto& base = p.options[*p.smallest_fitting];
  EXPECT_TRUE(base.fits);
  EXPECT_GT(base.n_cpu_moe, 0);
  EXPECT_LT(base.n_cpu_moe, 40);
  EXPECT_FALSE(p.options[base.n_cpu_moe - 1].fits) << "one fewer CPU layer must not fit";
  for (size_t i = 1; i < p.options.size(); ++i)
    EXPECT_LE(p.options[i].gpu.total(), p.options[i - 1].gpu.total());
  // Everything not placed on the GPU is on the host, nothing is lost.
  for (const auto& o : p.options)
    EXPECT_EQ(o.gpu.weights_total() + o.host.weights_total(), f.wm.total);
  // KV and state follow the (all-GPU) layers.
  EXPECT_GT(base.gpu.kv, 0);
  EXPECT_GT(base.gpu.state, 0);
  EXPECT_EQ(base.host.kv, 0);
}

TEST(PlanPlacement, ReserveAndContextPushMoreExpertsToCpu) {
  Fixture f = Load("qwen3moe");
  Plan a = MustPlan(f, Req(16LL << 30, 8192));
  PlanRequest r = Req(16LL << 30, 8192);
  r.reserve = 2LL << 30;
  Plan b = MustPlan(f, r);
  Plan c = MustPlan(f, Req(16LL << 30, 131072));
  ASSERT_TRUE(a.smallest_fitting && b.smallest_fitting && c.smallest_fitting);
  EXPECT_GT(*b.smallest_fitting, *a.smallest_fitting);
  EXPECT_GT(*c.smallest_fitting, *a.smallest_fitting);
}

TEST(PlanPlacement, NothingFitsGivesNoCommandAndTheShortfall) {
  Fixture f = Load("qwen3moe");
  Plan p = MustPlan(f, Req(1LL << 30, 262144));
  EXPECT_FALSE(p.best());
  EXPECT_FALSE(p.config.has_value());
  const PlacementOption& all_cpu = p.options.back();
  EXPECT_EQ(p.shortfall, all_cpu.gpu.total() + p.margin - p.budget);
  EXPECT_GT(p.shortfall, 0);
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("nothing fits"), std::string::npos);
  EXPECT_NE(p.notes[0].find("experts"), std::string::npos);
}

TEST(PlanPlacement, NothingFitsForADenseModelSpeaksOfLayers) {
  Fixture f = Load("llama");
  Plan p = MustPlan(f, Req(1LL << 20, 4096));
  EXPECT_FALSE(p.config.has_value());
  ASSERT_FALSE(p.notes.empty());
  EXPECT_EQ(p.notes[0].find("expert"), std::string::npos) << p.notes[0];
  EXPECT_NE(p.notes[0].find("layers"), std::string::npos) << p.notes[0];
}

TEST(PlanPlacement, EverythingFitsMeansNZero) {
  Fixture f = Load("qwen3moe", "tiny");
  Plan p = MustPlan(f, Req(8LL << 30, 4096));
  ASSERT_TRUE(p.best());
  EXPECT_EQ(p.best()->n_cpu_moe, 0);
  EXPECT_FALSE(p.fine_filled());
}

// Issue 8: with a fine fill, the recommendation, its breakdown and the command
// must all describe the same configuration (N-1 plus the -ot override).
TEST(PlanPlacement, FineFillIsOneConsistentConfiguration) {
  Fixture f = Load("qwen3moe");
  Plan base = MustPlan(f, Req(12LL << 30, 8192));
  ASSERT_TRUE(base.smallest_fitting);
  const PlacementOption& b = base.options[*base.smallest_fitting];
  const int n = b.n_cpu_moe;
  ASSERT_GT(n, 0);
  const int64_t layer_experts = f.wm.layers[n - 1].experts();
  PlanRequest r = Req(12LL << 30, 8192);
  // Shrink the budget so the headroom is ~40% of one layer's experts.
  r.vram_free -= b.headroom - layer_experts * 4 / 10;
  Plan p = MustPlan(f, r);
  ASSERT_TRUE(p.fine_filled());
  const PlacementOption& chosen = *p.best();
  EXPECT_EQ(p.options[*p.smallest_fitting].n_cpu_moe, n);
  EXPECT_EQ(chosen.n_cpu_moe, n - 1);
  EXPECT_EQ(chosen.placement.override_layer, n - 1);
  EXPECT_TRUE(chosen.fits);
  EXPECT_GT(p.gpu_bytes_gained, 0);
  EXPECT_EQ(chosen.gpu.weights_total(),
            p.options[*p.smallest_fitting].gpu.weights_total() + p.gpu_bytes_gained);
  // The breakdown is that of the exact placement, evaluated on its own (for
  // llama-server, which reserves one output per sequence).
  ContextParams server = r.ctx;
  server.reserve_outputs = ReserveOutputs::kPerSequence;
  auto again = EvaluatePlacement(f.gguf, f.arch, f.wm, server, chosen.placement, r.device_kinds);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->gpu.total(), chosen.gpu.total());
  ASSERT_TRUE(p.config);
  const std::string cmd = ShellJoin(ServerArgv(*p.config));
  EXPECT_NE(cmd.find("--n-cpu-moe " + std::to_string(n - 1) + " "), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("-ot 'blk\\." + std::to_string(n - 1) + "\\."), std::string::npos) << cmd;
}

TEST(PlanPlacement, NoGpuKeepsEveryLayerOnTheHost) {
  // --vram 0 (or a machine without a GPU): nothing to fit, so no "nothing
  // fits"; the command is -ngl 0 without --n-cpu-moe, for MoE and dense alike.
  for (const char* preset : {"qwen35moe", "llama"}) {
    Fixture f = Load(preset);
    Plan p = MustPlan(f, Req(0, 32768));
    ASSERT_TRUE(p.host_only) << preset;
    ASSERT_TRUE(p.config.has_value()) << preset;
    ASSERT_NE(p.best(), nullptr);
    EXPECT_EQ(p.config->placement.n_gpu_layers, 0) << preset;
    EXPECT_EQ(p.config->placement.WrittenNCpuMoe(), -1) << preset;
    const std::string cmd = ShellJoin(ServerArgv(*p.config));
    EXPECT_NE(cmd.find(" -ngl 0 "), std::string::npos) << cmd;
    EXPECT_EQ(cmd.find("n-cpu-moe"), std::string::npos) << cmd;
    EXPECT_EQ(cmd.find("-ot"), std::string::npos) << cmd;
    EXPECT_TRUE(p.config->placement.fine_fill.empty());
    ASSERT_EQ(p.options.size(), 1u);
    EXPECT_TRUE(p.best()->fits);
    EXPECT_EQ(p.best()->gpu.total(), 0) << preset;
    EXPECT_EQ(p.best()->host.weights_total(), f.wm.total) << preset;
    EXPECT_GT(p.best()->host.kv + p.best()->host.state, 0) << preset;
    EXPECT_GT(p.best()->host.compute, 0) << preset;
    EXPECT_EQ(p.shortfall, 0);
    // Said once.
    int said = 0;
    for (const auto& n : p.notes) said += n.find("no GPU") != std::string::npos ? 1 : 0;
    EXPECT_EQ(said, 1) << preset;
  }
}

TEST(PlanPlacement, DenseModelPlansNgl) {
  Fixture f = Load("llama");
  ASSERT_FALSE(f.arch.is_moe());
  const int64_t total = f.wm.total;
  Plan p = MustPlan(f, Req(total / 2 + (1LL << 30), 4096));
  ASSERT_FALSE(p.moe);
  ASSERT_TRUE(p.best());
  EXPECT_GT(p.best()->ngl, 0);
  EXPECT_LT(p.best()->ngl, p.n_layer + 1);
  const std::string cmd = ShellJoin(ServerArgv(*p.config));
  EXPECT_NE(cmd.find("-ngl " + std::to_string(p.best()->ngl)), std::string::npos);
  EXPECT_EQ(cmd.find("n-cpu-moe"), std::string::npos);
}

// Issue 8: compute with an absurd micro-batch is clamped like llama.cpp does.
TEST(PlanPlacement, MicroBatchIsClampedToTheContext) {
  Fixture f = Load("qwen3moe", "tiny");
  PlanRequest big = Req(8LL << 30, 512);
  big.ctx.n_ubatch = 4096;
  big.ctx.n_batch = 4096;
  PlanRequest same = Req(8LL << 30, 512);
  Plan a = MustPlan(f, big), b = MustPlan(f, same);
  ASSERT_TRUE(a.best() && b.best());
  EXPECT_EQ(a.best()->gpu.compute, b.best()->gpu.compute);
  EXPECT_EQ(a.layout.n_ubatch, 512);
}

// Issue 8: a header of many layers is planned in linear time: one pass of
// prefix sums per option, and a bounded number of compute simulations.
TEST(PlanPlacement, DeepModelsNeedABoundedNumberOfSimulations) {
  SynthSpec spec = ScaleSynthSpec(*SynthPreset("llama"), *ParseSynthScale("tiny"));
  spec.n_layer = 20000;
  SynthOptions o;
  o.spec = spec;
  auto w = BuildSynthWriter(o);
  ASSERT_TRUE(w.ok());
  Fixture f;
  GgufFile file;
  file.metadata = w->metadata();
  for (const auto& t : w->tensors()) {
    TensorInfo ti;
    ti.name = t.name;
    ti.ne = t.ne;
    ti.type = t.type;
    ti.n_bytes = t.n_bytes;
    f.gguf.tensors.push_back(ti);
  }
  f.gguf.parts.push_back(std::move(file));
  auto a = AnalyzeArchitecture(f.gguf);
  ASSERT_TRUE(a.ok());
  f.arch = *a;
  f.wm = ComputeWeightMap(f.gguf, f.arch);
  Plan p = MustPlan(f, Req(8LL << 30, 4096));
  EXPECT_EQ(p.options.size(), 20002u);
  EXPECT_GT(p.compute_simulations, 0);
  EXPECT_LE(p.compute_simulations, 64);
  ASSERT_TRUE(p.best());
  EXPECT_GT(p.best()->ngl, 0);
}

TEST(PlanPlacement, AbsurdRequestsAreErrorsNotOverflows) {
  Fixture f = Load("qwen3moe", "tiny");
  PlanRequest r = Req(8LL << 30, 1000000000);
  r.ctx.n_ubatch = 2147483647;
  r.ctx.n_batch = 2147483647;
  auto p = PlanPlacement(f.gguf, f.arch, f.wm, r);
  // A billion tokens of context fit in 64 bits; the plan must say what it costs, not wrap.
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_FALSE(p->best());
  EXPECT_GT(p->options.front().gpu.kv, int64_t{1} << 40);
  r.ctx.n_ctx = int64_t{1} << 36;
  EXPECT_FALSE(PlanPlacement(f.gguf, f.arch, f.wm, r).ok());
}

// The memory map of a whole configuration is the plan's for the same settings,
// and follows the configuration's own micro-batch, KV type and flash attention.
TEST(PlanServerConfig, IsThePlanOfTheConfigurationsOwnSettings) {
  Fixture f = Load("qwen3moe", "tiny");
  PlanRequest r = Req(int64_t{8} << 30, 8192);
  r.model_path = "m.gguf";
  r.fine_fill = false;
  const Plan p = MustPlan(f, r);
  ASSERT_TRUE(p.config);
  EXPECT_EQ(p.config->model, "m.gguf");
  auto same = PlanServerConfig(f.gguf, f.arch, f.wm, r, *p.config);
  ASSERT_TRUE(same.ok()) << same.error().message();
  EXPECT_EQ(same->gpu.total(), p.best()->gpu.total());
  EXPECT_EQ(same->headroom, p.best()->headroom);
  // Another micro-batch, a q8_0 cache and no flash attention: the plan for those.
  ServerConfig other = *p.config;
  other.n_ubatch = 1024;
  other.n_batch = 2048;
  other.type_k = other.type_v = ggml_type::kQ8_0;
  other.flash_attn = FlashAttn::kOff;
  auto mine = PlanServerConfig(f.gguf, f.arch, f.wm, r, other);
  ASSERT_TRUE(mine.ok()) << mine.error().message();
  PlanRequest r2 = r;
  r2.ctx.n_ubatch = 1024;
  r2.ctx.type_k = r2.ctx.type_v = ggml_type::kQ8_0;
  r2.ctx.flash_attn = false;
  const Plan p2 = MustPlan(f, r2);
  const PlacementOption* o = nullptr;
  for (const auto& x : p2.options) {
    if (x.n_cpu_moe == p.best()->n_cpu_moe) o = &x;
  }
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(mine->gpu.total(), o->gpu.total());
  EXPECT_EQ(mine->headroom, o->headroom);
  EXPECT_NE(mine->gpu.kv, same->gpu.kv);
  EXPECT_NE(mine->gpu.compute, same->gpu.compute);
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

// The planner's suffix sums (its fast path over N) and the tensor-by-tensor
// memory map (several devices, -ot rules) agree on one device.
TEST(EvaluatePlacement, TheFastPathAndTheTensorPathAgree) {
  Fixture f = Load("qwen3moe");
  ContextParams ctx;
  ctx.n_ctx = 8192;
  for (int n_cpu_moe : {0, 5, 47}) {
    WeightPlacement fast;
    fast.has_device = true;
    fast.n_gpu_layers = 99;
    fast.n_cpu_moe = n_cpu_moe;
    fast.override_layer = 4;
    fast.override_kinds = {"ffn_up_exps"};
    WeightPlacement by_tensor = fast;
    ASSERT_TRUE(by_tensor.SetRules({{"matches-no-tensor", kHostDevice}}).ok());
    auto a = EvaluatePlacement(f.gguf, f.arch, f.wm, ctx, fast, {DeviceKind::kCuda});
    auto b = EvaluatePlacement(f.gguf, f.arch, f.wm, ctx, by_tensor, {DeviceKind::kCuda});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->gpu.weights, b->gpu.weights) << n_cpu_moe;
    EXPECT_EQ(a->host.weights, b->host.weights) << n_cpu_moe;
    EXPECT_EQ(a->gpu.kv, b->gpu.kv);
    EXPECT_EQ(a->gpu.compute, b->gpu.compute);
    ASSERT_EQ(b->devices.size(), 1u);
    EXPECT_EQ(b->devices[0].total(), a->gpu.total());
  }
}

}  // namespace
}  // namespace moetune
