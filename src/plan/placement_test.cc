#include "plan/placement.h"

#include <gtest/gtest.h>

#include "model/test_models.h"

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

TEST(PlanPlacement, PicksSmallestFittingNAndGpuShrinksWithN) {
  Fixture f = Load("qwen35moe");  // ~20 GiB at Q4_K_M
  Plan p = PlanPlacement(f.gguf, f.arch, f.wm, Req(12LL << 30, 32768));
  ASSERT_TRUE(p.moe);
  ASSERT_EQ(p.options.size(), 41u);  // N = 0..40
  ASSERT_TRUE(p.recommended.has_value());
  const auto& best = *p.best();
  EXPECT_TRUE(best.fits);
  EXPECT_GT(best.n_cpu_moe, 0);
  EXPECT_LT(best.n_cpu_moe, 40);
  EXPECT_FALSE(p.options[best.n_cpu_moe - 1].fits) << "one fewer CPU layer must not fit";
  for (size_t i = 1; i < p.options.size(); ++i)
    EXPECT_LE(p.options[i].gpu.total(), p.options[i - 1].gpu.total());
  // Everything not placed on the GPU is on the host, nothing is lost.
  for (const auto& o : p.options)
    EXPECT_EQ(o.gpu.weights_total() + o.host.weights_total(), f.wm.total);
  // KV and state follow the (all-GPU) layers.
  EXPECT_GT(best.gpu.kv, 0);
  EXPECT_GT(best.gpu.state, 0);
  EXPECT_EQ(best.host.kv, 0);
}

TEST(PlanPlacement, ReserveAndContextPushMoreExpertsToCpu) {
  Fixture f = Load("qwen3moe");
  Plan a = PlanPlacement(f.gguf, f.arch, f.wm, Req(16LL << 30, 8192));
  PlanRequest r = Req(16LL << 30, 8192);
  r.reserve = 2LL << 30;
  Plan b = PlanPlacement(f.gguf, f.arch, f.wm, r);
  Plan c = PlanPlacement(f.gguf, f.arch, f.wm, Req(16LL << 30, 131072));
  ASSERT_TRUE(a.best() && b.best() && c.best());
  EXPECT_GT(b.best()->n_cpu_moe, a.best()->n_cpu_moe);
  EXPECT_GT(c.best()->n_cpu_moe, a.best()->n_cpu_moe);
}

TEST(PlanPlacement, NothingFitsSaysWhy) {
  Fixture f = Load("qwen3moe");
  Plan p = PlanPlacement(f.gguf, f.arch, f.wm, Req(1LL << 30, 262144));
  EXPECT_FALSE(p.recommended.has_value());
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("nothing fits"), std::string::npos);
}

TEST(PlanPlacement, EverythingFitsMeansNZero) {
  Fixture f = Load("qwen3moe", "tiny");
  Plan p = PlanPlacement(f.gguf, f.arch, f.wm, Req(8LL << 30, 4096));
  ASSERT_TRUE(p.best());
  EXPECT_EQ(p.best()->n_cpu_moe, 0);
  EXPECT_TRUE(p.fine_fill.empty());
}

TEST(PlanPlacement, FineFillUsesHeadroomWithSingleTensors) {
  Fixture f = Load("qwen3moe");
  // Find a budget where layer N-1's down projection fits but not all three.
  Plan base = PlanPlacement(f.gguf, f.arch, f.wm, Req(12LL << 30, 8192));
  ASSERT_TRUE(base.best());
  const int n = base.best()->n_cpu_moe;
  ASSERT_GT(n, 0);
  const int64_t layer_experts = f.wm.layers[n - 1].experts();
  PlanRequest r = Req(12LL << 30, 8192);
  // Shrink the budget so the headroom is ~40% of one layer's experts.
  r.vram_free -= base.best()->headroom - layer_experts * 4 / 10;
  Plan p = PlanPlacement(f.gguf, f.arch, f.wm, r);
  ASSERT_TRUE(p.best());
  EXPECT_EQ(p.best()->n_cpu_moe, n);
  ASSERT_EQ(p.fine_fill.size(), 1u);
  EXPECT_EQ(p.fine_fill_n_cpu_moe, n - 1);
  EXPECT_NE(p.fine_fill[0].pattern.find("blk\\." + std::to_string(n - 1) + "\\."),
            std::string::npos);
  EXPECT_GT(p.fine_fill[0].bytes_on_gpu_gained, 0);
  EXPECT_LE(p.fine_fill[0].bytes_on_gpu_gained, p.best()->headroom);
  const auto args = ServerArgs("m.gguf", p, r);
  const std::string cmd = ShellJoin(args);
  EXPECT_NE(cmd.find("--n-cpu-moe " + std::to_string(n - 1)), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("-ot 'blk"), std::string::npos) << cmd;
}

TEST(PlanPlacement, DenseModelPlansNgl) {
  Fixture f = Load("llama");
  ASSERT_FALSE(f.arch.is_moe());
  const int64_t total = f.wm.total;
  Plan p = PlanPlacement(f.gguf, f.arch, f.wm, Req(total / 2 + (1LL << 30), 4096));
  ASSERT_FALSE(p.moe);
  ASSERT_TRUE(p.best());
  EXPECT_GT(p.best()->ngl, 0);
  EXPECT_LT(p.best()->ngl, p.n_layer + 1);
  const std::string cmd = ShellJoin(ServerArgs("m.gguf", p, Req(0, 4096)));
  EXPECT_NE(cmd.find("-ngl " + std::to_string(p.best()->ngl)), std::string::npos);
  EXPECT_EQ(cmd.find("n-cpu-moe"), std::string::npos);
}

TEST(ServerArgs, ExactCommand) {
  Fixture f = Load("qwen3moe", "tiny");
  PlanRequest r = Req(8LL << 30, 32768);
  r.ctx.type_k = r.ctx.type_v = 8;  // q8_0
  Plan p = PlanPlacement(f.gguf, f.arch, f.wm, r);
  EXPECT_EQ(
      ShellJoin(ServerArgs("/models/my model.gguf", p, r)),
      "llama-server -m '/models/my model.gguf' -ngl 99 --n-cpu-moe 0 -c 32768 -ub 512 -b 2048 "
      "-fa on -ctk q8_0 -ctv q8_0 -np 1 -fit off");
}

TEST(ShellJoin, QuotesWhatTheShellWouldSplit) {
  EXPECT_EQ(ShellJoin({"a", "b c", "it's", ""}), "a 'b c' 'it'\\''s' ''");
  EXPECT_EQ(ShellJoin({"blk\\.3\\.ffn=CPU"}), "'blk\\.3\\.ffn=CPU'");
}

}  // namespace
}  // namespace moetune
