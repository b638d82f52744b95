#include "engine/llama_bench.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/server_test_util.h"

namespace moetune {
namespace {

EngineInfo FakeInfo() {
  EngineInfo info;
  info.dir = "/opt/llama dir";
  info.bench_flags = {"-ncmoe", "-ot", "-lm", "-d", "--progress", "-fa"};
  return info;
}

RunConfig Base() {
  RunConfig c;
  c.model = "/models/my model's.gguf";
  c.repetitions = 3;
  return c;
}

std::string ArgAfter(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "<absent>" : *(it + 1);
}

TEST(LlamaBenchPlanTest, ThreadSweepIsOneInvocation) {
  std::vector<RunConfig> configs;
  for (int t : {1, 2, 4}) {
    for (auto [p, n] : {std::pair{64, 0}, std::pair{0, 16}}) {
      RunConfig c = Base();
      c.threads = t;
      c.n_prompt = p;
      c.n_gen = n;
      configs.push_back(c);
    }
  }
  LlamaBenchEngine engine(FakeInfo());
  const auto plan = engine.PlanInvocations(configs);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].configs.size(), 6u);
  const auto& argv = plan[0].argv;
  EXPECT_EQ(argv[0], "/opt/llama dir/llama-bench");
  EXPECT_EQ(ArgAfter(argv, "-m"),
            "/models/my model's.gguf");  // one argument, never split or quoted
  EXPECT_EQ(ArgAfter(argv, "-t"), "1,2,4");
  EXPECT_EQ(ArgAfter(argv, "-p"), "64");
  EXPECT_EQ(ArgAfter(argv, "-n"), "16");
  EXPECT_EQ(ArgAfter(argv, "-ngl"), "99");
  EXPECT_EQ(ArgAfter(argv, "-ncmoe"), "0");
  EXPECT_EQ(ArgAfter(argv, "-o"), "jsonl");
  EXPECT_EQ(ArgAfter(argv, "-r"), "3");
  EXPECT_EQ(ArgAfter(argv, "-fa"), "<absent>");
  EXPECT_EQ(ArgAfter(argv, "-d"), "<absent>");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "-fitt"), 0);
}

TEST(LlamaBenchPlanTest, PlacementChangesStartNewInvocations) {
  std::vector<RunConfig> configs;
  for (int ncmoe : {0, 2}) {
    for (int t : {1, 2}) {
      RunConfig c = Base();
      c.placement.n_cpu_moe = ncmoe;
      c.threads = t;
      c.n_gen = 8;
      configs.push_back(c);
    }
  }
  LlamaBenchEngine engine(FakeInfo());
  const auto plan = engine.PlanInvocations(configs);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(ArgAfter(plan[0].argv, "-ncmoe"), "0");
  EXPECT_EQ(ArgAfter(plan[1].argv, "-ncmoe"), "2");
  EXPECT_EQ(ArgAfter(plan[1].argv, "-t"), "1,2");
  EXPECT_EQ(plan[1].configs, (std::vector<std::size_t>{2, 3}));
}

// RPC servers add devices: a change of --rpc is a new model load, and the
// flag reaches llama-bench.
TEST(LlamaBenchPlanTest, RpcServersAreAPartOfTheModelKey) {
  std::vector<RunConfig> configs;
  for (const char* rpc : {"", "127.0.0.1:50052"}) {
    RunConfig c = Base();
    c.rpc = *rpc ? std::vector<std::string>{rpc} : std::vector<std::string>{};
    c.n_gen = 8;
    configs.push_back(c);
  }
  EngineInfo info = FakeInfo();
  info.bench_flags.insert("--rpc");
  LlamaBenchEngine engine(info);
  const auto plan = engine.PlanInvocations(configs);
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(ArgAfter(plan[0].argv, "--rpc"), "<absent>");
  EXPECT_EQ(ArgAfter(plan[1].argv, "--rpc"), "127.0.0.1:50052");
  EXPECT_FALSE(plan[1].unsupported.has_value());
  info.bench_flags.erase("--rpc");
  const auto without = LlamaBenchEngine(info).PlanInvocations(configs);
  ASSERT_TRUE(without[1].unsupported.has_value());
  EXPECT_NE(without[1].unsupported->find("--rpc"), std::string::npos);
}

TEST(LlamaBenchPlanTest, NonGridFallsBackWithoutExtraTests) {
  // (t=1, ub=128) and (t=2, ub=512): a grid would add two unrequested tests.
  RunConfig a = Base();
  a.threads = 1;
  a.n_ubatch = 128;
  a.n_prompt = 32;
  RunConfig b = a;
  b.threads = 2;
  b.n_ubatch = 512;
  LlamaBenchEngine engine(FakeInfo());
  const auto plan = engine.PlanInvocations({a, b});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(ArgAfter(plan[0].argv, "-t"), "1");
  EXPECT_EQ(ArgAfter(plan[1].argv, "-ub"), "512");
}

TEST(LlamaBenchPlanTest, DuplicatesRunOnce) {
  RunConfig a = Base();
  a.n_prompt = 32;
  LlamaBenchEngine engine(FakeInfo());
  const auto plan = engine.PlanInvocations({a, a});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].configs.size(), 1u);
}

TEST(LlamaBenchPlanTest, DepthPrefillDecodeAndOptions) {
  RunConfig a = Base();
  a.n_prompt = 128;
  a.n_gen = 32;
  a.n_depth = 4096;
  a.flash_attn = FlashAttn::kOn;
  ASSERT_TRUE(a.placement.SetOverrideTensor("blk\\.3\\.ffn_.*=CPU").ok());
  a.load_mode = LoadMode::kMmap;
  a.warmup = false;
  LlamaBenchEngine engine(FakeInfo());
  const auto argv = engine.PlanInvocations({a})[0].argv;
  EXPECT_EQ(ArgAfter(argv, "-pg"), "128,32");
  EXPECT_EQ(ArgAfter(argv, "-p"), "0");
  EXPECT_EQ(ArgAfter(argv, "-n"), "0");
  EXPECT_EQ(ArgAfter(argv, "-d"), "4096");
  EXPECT_EQ(ArgAfter(argv, "-fa"), "on");
  EXPECT_EQ(ArgAfter(argv, "-ot"), "blk\\.3\\.ffn_.*=CPU");
  EXPECT_EQ(ArgAfter(argv, "-lm"), "mmap");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--no-warmup"), 1);
}

TEST(LlamaBenchPlanTest, OldEngineWithoutNcmoeUsesOverrides) {
  EngineInfo info = FakeInfo();
  info.bench_flags.erase("-ncmoe");
  info.bench_flags.erase("-d");
  RunConfig a = Base();
  a.n_gen = 8;
  a.placement.n_cpu_moe = 2;
  LlamaBenchEngine engine(info);
  auto plan = engine.PlanInvocations({a});
  EXPECT_EQ(ArgAfter(plan[0].argv, "-ncmoe"), "<absent>");
  // One alternative with two rules: llama-bench would run a "," as two tests.
  EXPECT_EQ(ArgAfter(plan[0].argv, "-ot"),
            "blk\\.0\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU;blk\\.1\\.ffn_(up|down|gate|"
            "gate_up)_(ch|)exps=CPU");
  EXPECT_FALSE(plan[0].unsupported.has_value());
  a.n_depth = 512;
  plan = engine.PlanInvocations({a});
  ASSERT_TRUE(plan[0].unsupported.has_value());
  // Unsupported groups fail as data without starting anything.
  const auto run = engine.Run({a});
  ASSERT_FALSE(run.results[0].ok());
  EXPECT_EQ(run.results[0].failure->kind, FailureKind::kInvalidConfig);
}

// An RPC host that does not answer fails its invocation by name before the
// engine starts (a tune or calibrate goes on with the rest, as data).
TEST(LlamaBenchPlanTest, AnRpcHostThatDoesNotAnswerFailsItsInvocationByName) {
  EngineInfo info = FakeInfo();
  info.bench_flags.insert("--rpc");
  auto port = FindFreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string down = "127.0.0.1:" + std::to_string(*port);
  RunConfig a = Base();
  a.n_gen = 8;
  a.rpc = {down};
  LlamaBenchEngine engine(info);
  const auto run = engine.Run({a});
  ASSERT_FALSE(run.results[0].ok());
  EXPECT_EQ(run.results[0].failure->kind, FailureKind::kRpcHost);
  EXPECT_EQ(run.results[0].failure->rpc_host, down);
  EXPECT_EQ(run.results[0].failure->exit, "not started");
  EXPECT_NE(run.results[0].failure->message.find("connection refused"), std::string::npos);
}

TEST(LlamaBenchPlanTest, CpuMoeOverrideMatchesLlamaCppRegex) {
  EXPECT_EQ(CpuMoeOverride(2),
            "blk\\.0\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU,blk\\.1\\.ffn_(up|down|gate|gate_"
            "up)_(ch|)exps=CPU");
  EXPECT_EQ(CpuMoeOverride(0), "");
}

TEST(LlamaBenchPlanTest, ConfigurationsAreInLlamaBenchsOwnOrder) {
  // moetune's CLI nests threads outside batch; llama-bench nests n_batch
  // outside n_threads (get_cmd_params_instances), and -p tests before -n tests.
  std::vector<RunConfig> configs;
  for (int t : {1, 2}) {
    for (int b : {512, 1024}) {
      for (auto [p, n] : {std::pair{0, 8}, std::pair{16, 0}}) {
        RunConfig c = Base();
        c.threads = t;
        c.n_batch = b;
        c.n_prompt = p;
        c.n_gen = n;
        configs.push_back(c);
      }
    }
  }
  LlamaBenchEngine engine(FakeInfo());
  const auto plan = engine.PlanInvocations(configs);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(ArgAfter(plan[0].argv, "-t"), "1,2");
  EXPECT_EQ(ArgAfter(plan[0].argv, "-b"), "512,1024");
  // b=512: t=1 (pp16, tg8), t=2 (pp16, tg8); then b=1024 likewise.
  EXPECT_EQ(plan[0].configs, (std::vector<std::size_t>{1, 0, 5, 4, 3, 2, 7, 6}));
}

TEST(LlamaBenchPlanTest, FlashAttnIsPassedAndMatchedInOneSpelling) {
  RunConfig a = Base();
  a.n_gen = 8;
  a.flash_attn = *ParseFlashAttn("1");
  RunConfig b = a;
  b.flash_attn = *ParseFlashAttn("on");
  LlamaBenchEngine engine(FakeInfo());
  const auto plan = engine.PlanInvocations({a, b});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].configs.size(), 1u);  // the same test, run once
  EXPECT_EQ(ArgAfter(plan[0].argv, "-fa"), "on");
}

TEST(LlamaBenchPlanTest, OverridesWithCommasReachTheEngineIntact) {
  RunConfig a = Base();
  a.n_gen = 8;
  ASSERT_TRUE(
      a.placement
          .SetOverrideTensor("blk\\.[0-9]{1,2}\\.ffn_up_exps=CPU,blk\\.0\\.ffn_down_exps=CPU")
          .ok());
  LlamaBenchEngine engine(FakeInfo());
  auto plan = engine.PlanInvocations({a});
  ASSERT_FALSE(plan[0].unsupported.has_value()) << *plan[0].unsupported;
  const std::string ot = ArgAfter(plan[0].argv, "-ot");
  EXPECT_EQ(ot.find(','), std::string::npos) << ot;
  EXPECT_NE(ot.find(";blk\\.0\\.ffn_down_exps=CPU"), std::string::npos) << ot;
  // A rule without a buffer type cannot even be held: refused before anything starts.
  const Status bad = a.placement.SetOverrideTensor("blk\\.0\\.ffn_up_exps");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pattern=BUFFER_TYPE"), std::string::npos);
  // A pattern llama-bench cannot be given intact is refused as unsupported.
  a.placement.overrides = {{"{1,2}a", "CPU"}};
  plan = engine.PlanInvocations({a});
  ASSERT_TRUE(plan[0].unsupported.has_value());
}

TEST(LlamaBenchPlanTest, TenThousandConfigurationsPlanAsOneGrid) {
  // 100 thread counts x 100 micro-batches: one process, every test once, in
  // llama-bench's order (the grouping is O(n log n); it was quadratic).
  std::vector<RunConfig> configs;
  for (int t = 1; t <= 100; ++t) {
    for (int ub = 1; ub <= 100; ++ub) {
      RunConfig c = Base();
      c.threads = t;
      c.n_ubatch = ub;
      c.n_gen = 8;
      configs.push_back(c);
    }
  }
  configs.push_back(configs.front());  // a duplicate
  LlamaBenchEngine engine(FakeInfo());
  const auto plan = engine.PlanInvocations(configs);
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_EQ(plan[0].configs.size(), 10000u);
  // ub outside t: the second test is ub=1 t=2, i.e. configuration 100.
  EXPECT_EQ(plan[0].configs[1], 100u);
  EXPECT_EQ(plan[0].configs[100], 1u);
}

TEST(LlamaBenchRunTest, MissingEngineIsAFailureValue) {
  EngineInfo info = FakeInfo();
  info.dir = "/nonexistent/engine";
  LlamaBenchEngine engine(info);
  RunConfig a = Base();
  a.n_gen = 8;
  const auto run = engine.Run({a});
  ASSERT_EQ(run.results.size(), 1u);
  ASSERT_FALSE(run.results[0].ok());
  EXPECT_EQ(run.results[0].failure->kind, FailureKind::kEngineMissing);
  EXPECT_NE(run.results[0].failure->message.find("/nonexistent/engine/llama-bench"),
            std::string::npos);
}

// A fake llama-bench that never answers.
class SlowEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = ::testing::TempDir() + "slow_bench_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const std::string bench = dir + "/llama-bench";
    std::ofstream(bench) << "#!/bin/sh\nexec sleep 60\n";
    std::filesystem::permissions(bench, std::filesystem::perms::owner_all);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string dir;
};

// The caller's time limit (a tune's budget left) ends the process long before
// the per-test timeout, and marks the invocation as ended by it.
TEST_F(SlowEngineTest, ATimeLimitEndsTheProcess) {
  EngineInfo info = FakeInfo();
  info.dir = dir;
  LlamaBenchEngine engine(info);
  engine.set_time_limit(0.5);
  RunConfig a = Base();
  a.n_gen = 8;
  const auto start = std::chrono::steady_clock::now();
  const BenchRun run = engine.Run({a});
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 20.0);  // not the 300 s per test, nor the script's 60 s
  ASSERT_EQ(run.invocations.size(), 1u);
  EXPECT_TRUE(run.invocations[0].time_limit_reached);
  ASSERT_FALSE(run.results[0].ok());
  EXPECT_EQ(run.results[0].failure->kind, FailureKind::kTimeout);

  // With no time left, nothing is started.
  engine.set_time_limit(0);
  const BenchRun none = engine.Run({a});
  ASSERT_EQ(none.invocations.size(), 1u);
  EXPECT_TRUE(none.invocations[0].time_limit_reached);
  EXPECT_EQ(none.invocations[0].exit, "not started");
}

}  // namespace
}  // namespace moetune
