// Integration: the llama-bench engine against the real llama.cpp on a
// synthesized MoE model. Every failure kind is provoked for real, and after
// every test no process started by it may be left (checked in /proc).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "config/server_argv.h"
#include "engine/bench_jsonl.h"
#include "engine/engine_info.h"
#include "engine/fit_params.h"
#include "engine/llama_bench.h"
#include "report/engine_report.h"
#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

class EngineTest : public TinyModelSuite {
 protected:
  // Spaces and a quote in the path.
  static void SetUpTestSuite() { SetUpModel("tiny qwen3moe's model.gguf"); }

  static RunConfig Config(int n_prompt, int n_gen, int threads = 1) {
    RunConfig c;
    c.model = model_;
    c.threads = threads;
    c.n_prompt = n_prompt;
    c.n_gen = n_gen;
    c.repetitions = 2;
    return c;
  }
};

TEST_F(EngineTest, DiscoveryReportsVersionBackendsAndFlags) {
  EXPECT_FALSE(info_->version_line.empty());
  EXPECT_GT(info_->build_number, 0);
  // From llama-bench, or from another tool when llama-bench has no --version (0.4.0).
  EXPECT_FALSE(info_->version_tool.empty());
  for (const auto& w : info_->warnings) EXPECT_EQ(w.find("version"), std::string::npos) << w;
  // Backends loaded at run time (Debian's build) or linked in (a plain cmake
  // build): either way they are known, CPU and RPC among them.
  EXPECT_TRUE(info_->HasBackend("CPU")) << FormatEngineInfo(*info_);
  EXPECT_TRUE(info_->HasBackend("RPC")) << FormatEngineInfo(*info_);
  EXPECT_TRUE(info_->backend_source == BackendSource::kLoaded ||
              info_->backend_source == BackendSource::kLinked)
      << FormatEngineInfo(*info_);
  EXPECT_TRUE(info_->HasBenchFlag("-ngl"));
  EXPECT_TRUE(info_->HasBenchFlag("-o"));
  // The other tools' flags are known too (the command builders consult them).
  EXPECT_EQ(info_->Supports(EngineTool::kServer, "--n-cpu-moe"), true);
  EXPECT_EQ(info_->Supports(EngineTool::kFitParams, "-fitp"), true);
}

// `moetune engine` names where the version came from and how the backends were found.
TEST_F(EngineTest, EngineCommandSaysWhereVersionAndBackendsCameFrom) {
  const auto r = RunCommand({MoetuneBinary(), "engine", "--llama-dir", info_->dir, "--json"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version_line"], info_->version_line);
  EXPECT_EQ(j["version_tool"], info_->version_tool);
  EXPECT_TRUE(j["backend_source"] == "loaded at run time" || j["backend_source"] == "linked in")
      << j["backend_source"];
  EXPECT_FALSE(j["server_flags"].empty());
  EXPECT_FALSE(j["fit_params_flags"].empty());
  const auto t = RunCommand({MoetuneBinary(), "engine", "--llama-dir", info_->dir}, 120);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out.find("backends:  unknown"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("version:   unknown"), std::string::npos) << t.out;
  if (info_->backend_source == BackendSource::kLinked) {
    EXPECT_NE(t.out.find("(linked in: libggml-cpu.so"), std::string::npos) << t.out;
  }
}

TEST_F(EngineTest, PrefillAndDecodeResultsParse) {
  LlamaBenchEngine engine(*info_);
  const BenchRun run = engine.Run({Config(32, 0), Config(0, 8)});
  ASSERT_EQ(run.results.size(), 2u);
  for (const auto& r : run.results) {
    ASSERT_TRUE(r.ok()) << r.failure->message;
    EXPECT_GT(r.avg_ts, 0);
    EXPECT_EQ(r.samples_ts.size(), 2u);
    EXPECT_EQ(r.samples_ns.size(), 2u);
    EXPECT_EQ(r.record["n_threads"], 1);
  }
  EXPECT_EQ(run.results[0].record["n_prompt"], 32);
  EXPECT_EQ(run.results[1].record["n_gen"], 8);
  EXPECT_EQ(run.backends.find("CPU") != std::string::npos, true);
}

TEST_F(EngineTest, ThreadSweepLoadsTheModelOnce) {
  std::vector<RunConfig> configs;
  for (int t : {1, 2}) {
    for (int ub : {32, 64}) {
      RunConfig c = Config(16, 0, t);
      c.n_ubatch = ub;
      c.repetitions = 1;
      configs.push_back(c);
    }
  }
  LlamaBenchEngine engine(*info_);
  const BenchRun run = engine.Run(configs);
  ASSERT_EQ(run.invocations.size(), 1u);
  EXPECT_EQ(run.invocations[0].model_loads, 1);  // counted in the engine's own log
  for (const auto& r : run.results) ASSERT_TRUE(r.ok()) << r.failure->message;
  EXPECT_EQ(run.results[3].record["n_threads"], 2);
  EXPECT_EQ(run.results[3].record["n_ubatch"], 64);
}

TEST_F(EngineTest, PlacementChangesReload) {
  RunConfig a = Config(16, 0);
  a.repetitions = 1;
  RunConfig b = a;
  b.placement.n_cpu_moe = 2;
  LlamaBenchEngine engine(*info_);
  const BenchRun run = engine.Run({a, b});
  ASSERT_EQ(run.invocations.size(), 2u);
  EXPECT_EQ(run.TotalModelLoads(), 2);
  ASSERT_TRUE(run.results[1].ok());
  EXPECT_EQ(run.results[1].record["n_cpu_moe"], 2);
}

TEST_F(EngineTest, PlannedOrderIsTheInstalledLlamaBenchsOrder) {
  // The progress line "benchmark k/n" names configuration k of the planned
  // order; the installed binary must run them in exactly that order.
  std::vector<RunConfig> configs;
  for (int t : {1, 2}) {
    for (int b : {512, 1024}) {
      for (auto [p, n] : {std::pair{0, 2}, std::pair{8, 0}}) {
        RunConfig c = Config(p, n, t);
        c.n_batch = b;
        c.repetitions = 1;
        configs.push_back(c);
      }
    }
  }
  LlamaBenchOptions lo;
  lo.count_loads = false;
  LlamaBenchEngine engine(*info_, lo);
  const auto plan = engine.PlanInvocations(configs);
  ASSERT_EQ(plan.size(), 1u);
  RunOptions o;
  o.spawn.argv = plan[0].argv;
  auto out = RunProcess(o);
  ASSERT_TRUE(out.ok()) << out.error().message();
  ASSERT_TRUE(out->status.success()) << out->status.Describe();
  std::vector<std::string> bad;
  const auto records = ParseBenchJsonl(out->stdout_text, &bad);
  ASSERT_EQ(records.size(), configs.size()) << out->stdout_text;
  for (std::size_t k = 0; k < records.size(); ++k) {
    const RunConfig& c = configs[plan[0].configs[k]];
    EXPECT_EQ(records[k].n_threads, c.threads) << "test " << k + 1;
    EXPECT_EQ(records[k].n_batch, c.n_batch) << "test " << k + 1;
    EXPECT_EQ(records[k].n_prompt, c.n_prompt) << "test " << k + 1;
    EXPECT_EQ(records[k].n_gen, c.n_gen) << "test " << k + 1;
  }
}

TEST_F(EngineTest, FlashAttnOneIsMeasuredAndKept) {
  // "-fa 1" came back as flash_attn 1 and the result was dropped as unparseable.
  RunConfig c = Config(0, 4);
  c.repetitions = 1;
  c.flash_attn = *ParseFlashAttn("1");
  LlamaBenchEngine engine(*info_);
  const RunResult r = engine.RunOne(c);
  ASSERT_TRUE(r.ok()) << r.failure->message;
  EXPECT_EQ(r.record["flash_attn"], 1);
}

TEST_F(EngineTest, OverridesWithCommasReachTheEngineAsOneRuleSet) {
  RunConfig c = Config(0, 4);
  c.repetitions = 1;
  ASSERT_TRUE(
      c.placement
          .SetOverrideTensor("blk\\.[0-9]{1,2}\\.ffn_up_exps=CPU,blk\\.0\\.ffn_down_exps=CPU")
          .ok());
  LlamaBenchEngine engine(*info_);
  const BenchRun run = engine.Run({c});
  ASSERT_TRUE(run.results[0].ok()) << run.results[0].failure->message;
  // One test with both rules (a ',' would have made llama-bench run two).
  const std::string ot = run.results[0].record["tensor_buft_overrides"].get<std::string>();
  EXPECT_NE(ot.find(";blk\\.0\\.ffn_down_exps=CPU"), std::string::npos) << ot;
  EXPECT_EQ(ot.find(','), std::string::npos) << ot;
}

TEST_F(EngineTest, MissingModelFile) {
  RunConfig c = Config(16, 0);
  c.model = dir_->File("no such model.gguf");
  LlamaBenchEngine engine(*info_);
  const RunResult r = engine.RunOne(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failure->kind, FailureKind::kModelLoad) << r.failure->message;
  EXPECT_NE(r.failure->message.find("no such model.gguf"), std::string::npos) << r.failure->message;
}

TEST_F(EngineTest, CorruptGguf) {
  const std::string bad = dir_->File("corrupt.gguf");
  {
    std::ofstream f(bad, std::ios::binary);
    f << "GGUF\x03";  // a truncated header
    for (int i = 0; i < 100; ++i) f << "garbage";
  }
  RunConfig c = Config(16, 0);
  c.model = bad;
  LlamaBenchEngine engine(*info_);
  const RunResult r = engine.RunOne(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failure->kind, FailureKind::kModelLoad) << r.failure->message;
  EXPECT_NE(r.failure->message.find("gguf"), std::string::npos) << r.failure->message;
}

TEST_F(EngineTest, TimeoutOnALongRun) {
  RunConfig c = Config(0, 200000);
  c.repetitions = 5;
  LlamaBenchOptions o;
  o.timeout_per_test = std::chrono::milliseconds(1000);
  o.load_allowance = std::chrono::milliseconds(0);
  LlamaBenchEngine engine(*info_, o);
  const RunResult r = engine.RunOne(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failure->kind, FailureKind::kTimeout) << r.failure->message;
  EXPECT_NE(r.failure->message.find("1 s"), std::string::npos) << r.failure->message;
}

TEST_F(EngineTest, EngineKilledBySignal) {
  RunConfig c = Config(0, 200000);
  LlamaBenchEngine engine(*info_);
  std::atomic<bool> done{false};
  std::atomic<bool> killed{false};
  std::thread killer([&] {
    // Wait for the engine's model to be loaded (a second is plenty), then segfault it.
    for (int i = 0; i < 600 && !done; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const auto kids = LiveDescendantsOf(::getpid());
      if (!kids.empty() && i >= 20) {
        for (pid_t k : kids) ::kill(k, SIGSEGV);
        killed = true;
        return;
      }
    }
  });
  const RunResult r = engine.RunOne(c);
  done = true;
  killer.join();
  ASSERT_TRUE(killed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failure->kind, FailureKind::kCrash) << r.failure->message;
  EXPECT_NE(r.failure->message.find("SIGSEGV"), std::string::npos) << r.failure->message;
}

TEST_F(EngineTest, InvalidFlagValueIsRejectedByTheEngine) {
  // A ggml type llama-bench does not take for the KV cache (typed values that
  // the engine itself refuses: its words are the failure).
  RunConfig c = Config(16, 0);
  c.type_k = ggml_type::kQ4_K;
  LlamaBenchEngine engine(*info_);
  const RunResult r = engine.RunOne(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failure->kind, FailureKind::kInvalidConfig) << r.failure->message;
  EXPECT_NE(r.failure->message.find("-ctk"), std::string::npos) << r.failure->message;
}

TEST_F(EngineTest, MissingEngine) {
  EngineInfo gone = *info_;
  gone.dir = dir_->File("no-engine-here");
  LlamaBenchEngine engine(gone);
  const RunResult r = engine.RunOne(Config(16, 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.failure->kind, FailureKind::kEngineMissing);
  EXPECT_NE(r.failure->message.find("no-engine-here"), std::string::npos);

  DiscoveryOptions o;
  o.llama_dir = gone.dir;
  EXPECT_EQ(DiscoverEngine(o).error().kind(), ErrorKind::kNotFound);
}

TEST_F(EngineTest, FitParamsOracleReportsHostSizes) {
  auto fit = [&](const std::string& model, int64_t ctx) {
    ServerConfig c = UnsetServerConfig();
    c.model = model;
    c.ctx_size = ctx;
    return RunFitParams(*info_, c);
  };
  auto r = fit(model_, 4096);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const FitParamsDevice* host = r->Find("Host");
  ASSERT_NE(host, nullptr);
  EXPECT_GT(host->model_bytes.count(), 0);
  EXPECT_GT(host->context_bytes.count(), 0);
  // A larger context needs a larger KV cache.
  auto big = fit(model_, 16384);
  ASSERT_TRUE(big.ok());
  EXPECT_GT(big->Find("Host")->context_bytes, host->context_bytes);

  auto bad = fit(dir_->File("missing.gguf"), 4096);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("missing.gguf"), std::string::npos) << bad.error().message();
}

}  // namespace
}  // namespace moetune::itest
