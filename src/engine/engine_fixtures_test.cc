// The parsers and command builders against what two real llama.cpp engines
// print (tests/fixtures/engine/<engine>/, recorded by record.sh in that
// folder): Debian's 0.7.0 (build 11669, backends loaded at run time) and the
// 0.4.0 built from node-llama-cpp's bundle (backends linked in). Each test
// runs on both and says where they differ (docs/engine.md, compatibility).

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "config/server_argv.h"
#include "engine/bench_jsonl.h"
#include "engine/engine_info.h"
#include "engine/engine_output.h"
#include "engine/fit_params.h"
#include "engine/llama_bench.h"
#include "engine/server_test_util.h"

namespace moetune {
namespace {

struct EngineFixture {
  const char* dir;
  bool debian;  // 0.7.0 (build 11669) rather than the bundle's 0.4.0
};

std::ostream& operator<<(std::ostream& os, const EngineFixture& f) { return os << f.dir; }

std::string Read(const EngineFixture& f, const std::string& name) {
  std::ifstream in(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/engine/" + f.dir + "/" +
                   name);
  EXPECT_TRUE(in.good()) << f.dir << "/" << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An EngineInfo as discovery would fill it from the fixture's answers.
EngineInfo InfoOf(const EngineFixture& f) {
  EngineInfo info;
  info.dir = "/engine";
  ParseVersionOutput(Read(f, f.debian ? "bench-version.txt" : "server-version.txt"), &info);
  info.bench_flags = ParseHelpFlags(Read(f, "bench-help.txt"));
  info.server_flags = ParseHelpFlags(Read(f, "server-help.txt"));
  info.fit_params_flags = ParseHelpFlags(Read(f, "fit-params-help.txt"));
  return info;
}

class EngineFixtureTest : public ::testing::TestWithParam<EngineFixture> {};

std::string FixtureName(const ::testing::TestParamInfo<EngineFixture>& p) {
  return p.param.debian ? "Debian070" : "Bundle040";
}

TEST_P(EngineFixtureTest, VersionComesFromTheToolThatPrintsIt) {
  const EngineFixture& f = GetParam();
  EngineInfo bench;
  ParseVersionOutput(Read(f, "bench-version.txt"), &bench);
  if (f.debian) {
    EXPECT_EQ(bench.version, "0.7.0");
    EXPECT_EQ(bench.build_number, 11669);
    EXPECT_EQ(bench.commit, "Debian");
    EXPECT_EQ(Read(f, "bench-version.txt.rc"), "0\n");
  } else {
    // 0.4.0's llama-bench has no --version: its usage, exit status 1.
    EXPECT_TRUE(bench.version_line.empty()) << bench.version_line;
    EXPECT_EQ(Read(f, "bench-version.txt.rc"), "1\n");
  }
  // Every tool built on the common argument parser prints the same line.
  for (const char* file : {"server-version.txt", "cli-version.txt", "fit-params-version.txt"}) {
    EngineInfo other;
    ParseVersionOutput(Read(f, file), &other);
    EXPECT_EQ(other.version, f.debian ? "0.7.0" : "0.4.0-dev") << file;
    EXPECT_EQ(other.build_number, f.debian ? 11669 : 1) << file;
    EXPECT_EQ(other.commit, f.debian ? "Debian" : "80fb11a") << file;
    EXPECT_FALSE(other.built_with.empty()) << file;
  }
}

TEST_P(EngineFixtureTest, BackendsAreLoggedOnlyWhenLoadedAtRunTime) {
  const EngineFixture& f = GetParam();
  const auto loaded = ParseLoadedBackends(Read(f, "bench-version.txt"));
  if (f.debian) {
    EXPECT_EQ(loaded, (std::vector<std::string>{"RPC", "CPU"}));
  } else {
    EXPECT_TRUE(loaded.empty());  // linked in: engine/linked_backends.h finds them
  }
  // A CPU-only machine lists no device, with or without a device-less RPC flag.
  EXPECT_TRUE(ParseListDevices(Read(f, "bench-list-devices.txt")).empty());
  EXPECT_TRUE(ParseListDevices(Read(f, "bench-list-devices-rpc.txt")).empty());
  EXPECT_NE(Read(f, "bench-list-devices.txt").find("Available devices:"), std::string::npos);
}

TEST_P(EngineFixtureTest, HelpFlagsDifferWhereTheVersionsDiffer) {
  const EngineInfo info = InfoOf(GetParam());
  const bool debian = GetParam().debian;
  // llama-bench: 0.7.0 added --version and --repack, and dropped -mmp/-dio
  // (deprecated in 0.4.0 for -lm).
  EXPECT_EQ(info.Supports(EngineTool::kBench, "--version"), debian);
  EXPECT_EQ(info.Supports(EngineTool::kBench, "--repack"), debian);
  EXPECT_EQ(info.Supports(EngineTool::kBench, "-mmp"), !debian);
  // llama-server and llama-fit-params: 0.7.0 removed --mmap/--no-mmap,
  // --mlock and -dio, and added --moe-cache-mib.
  for (const EngineTool tool : {EngineTool::kServer, EngineTool::kFitParams}) {
    EXPECT_EQ(info.Supports(tool, "--no-mmap"), !debian) << EngineToolName(tool);
    EXPECT_EQ(info.Supports(tool, "--mlock"), !debian) << EngineToolName(tool);
    EXPECT_EQ(info.Supports(tool, "--moe-cache-mib"), debian) << EngineToolName(tool);
    EXPECT_EQ(info.Supports(tool, "-lm"), true) << EngineToolName(tool);
  }
  // Neither llama-fit-params takes -kvu (a llama-server flag).
  EXPECT_EQ(info.Supports(EngineTool::kFitParams, "-kvu"), false);
  EXPECT_EQ(info.Supports(EngineTool::kServer, "-kvu"), true);
}

// Every command moetune builds uses only flags both engines take.
TEST_P(EngineFixtureTest, MoetunesCommandsUseOnlyFlagsTheEngineTakes) {
  const EngineInfo info = InfoOf(GetParam());
  // llama-bench: a placement with a fine fill, a load mode, RPC and depths.
  RunConfig c;
  c.model = "m.gguf";
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 2;
  ASSERT_TRUE(c.placement.SetOverrideTensor("blk\\.2\\.ffn_up_exps=CPU").ok());
  c.load_mode = LoadMode::kNone;
  c.rpc = {"127.0.0.1:50052"};
  c.n_prompt = 512;
  c.n_depth = 1024;
  c.warmup = false;
  RunConfig d = c;
  d.n_prompt = 0;
  d.n_gen = 32;
  const auto plan = LlamaBenchEngine(info).PlanInvocations({c, d});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_FALSE(plan[0].unsupported.has_value()) << *plan[0].unsupported;
  const auto bench = CheckEngineFlags(info, EngineTool::kBench, plan[0].argv, "bench");
  EXPECT_TRUE(bench.ok()) << bench.error().message();

  // llama-fit-params: plan --check's dry run with host weights counted.
  ServerConfig launch;
  launch.model = "m.gguf";
  launch.placement.n_gpu_layers = 99;
  launch.placement.n_cpu_moe = 3;
  launch.placement.fine_fill = {{3, {"ffn_up_exps"}}};
  launch.ctx_size = 32768;
  launch.n_parallel = 4;
  launch.fit = Switch::kOff;
  FitParamsOptions fo;
  fo.count_host_weights = true;
  fo.rpc = "127.0.0.1:50052";
  const auto fit_argv = FitParamsArgv(info, launch, fo);
  const auto fit = CheckEngineFlags(info, EngineTool::kFitParams, fit_argv, "plan --check");
  EXPECT_TRUE(fit.ok()) << fit.error().message();
  // ...but not with one cache for all slots: -kvu is refused before the run.
  ServerConfig unified = launch;
  unified.kv_unified = Switch::kOn;
  const auto kvu = CheckEngineFlags(info, EngineTool::kFitParams, FitParamsArgv(info, unified, fo),
                                    "plan --check");
  ASSERT_FALSE(kvu.ok());
  EXPECT_NE(kvu.error().message().find("-kvu"), std::string::npos);
  EXPECT_NE(kvu.error().message().find(info.Describe()), std::string::npos);

  // llama-server: the command plan prints, and the one bench/serve start.
  const auto printed = CheckEngineFlags(info, EngineTool::kServer,
                                        ServerArgv(launch, "llama-server"), "the printed command");
  EXPECT_TRUE(printed.ok()) << printed.error().message();
  ServerOptions so;
  so.config.model = "m.gguf";
  ASSERT_TRUE(so.config.placement.SetOverrideTensor("blk\\.2\\.ffn_up_exps=CPU").ok());
  so.config.flash_attn = FlashAttn::kOn;
  so.config.threads = 2;
  const auto started =
      CheckEngineFlags(info, EngineTool::kServer, ServerArgv(info, so, 8080), "serve");
  EXPECT_TRUE(started.ok()) << started.error().message();
}

TEST_P(EngineFixtureTest, BenchJsonlHasTheFieldsMoetuneReads) {
  const bool debian = GetParam().debian;
  for (const char* file : {"bench-cpu.jsonl", "bench-rpc.jsonl"}) {
    std::vector<std::string> bad;
    const auto records = ParseBenchJsonl(Read(GetParam(), file), &bad);
    EXPECT_TRUE(bad.empty()) << bad.front();
    ASSERT_EQ(records.size(), 2u) << file;
    const bool rpc = std::string(file) == "bench-rpc.jsonl";
    EXPECT_EQ(records[0].n_prompt, 16);
    EXPECT_EQ(records[1].n_gen, 4);
    for (const auto& r : records) {
      EXPECT_GT(r.avg_ts, 0);
      EXPECT_EQ(r.samples_ts.size(), 2u);
      EXPECT_EQ(r.samples_ns.size(), 2u);
      EXPECT_EQ(r.n_threads, 1);
      EXPECT_EQ(r.n_ubatch, 16);
      EXPECT_EQ(r.n_cpu_moe, rpc ? 1 : 0);
      EXPECT_EQ(r.n_gpu_layers, rpc ? 99 : 0);
      EXPECT_EQ(r.backends, rpc ? "RPC" : "CPU");
      EXPECT_EQ(r.model_type.empty(), false);
      // 0.7.0 added the `repack` field; nothing in moetune reads it.
      EXPECT_EQ(r.raw.contains("repack"), debian) << file;
      EXPECT_EQ(r.raw["build_number"], debian ? 11669 : 1);
    }
  }
  // --progress lines: the same words in both versions.
  int lines = 0;
  std::istringstream err(Read(GetParam(), "bench-cpu.stderr"));
  for (std::string line; std::getline(err, line);) {
    if (const auto p = ParseBenchProgressLine(line)) {
      EXPECT_EQ(p->total, 2u);
      ++lines;
    }
  }
  EXPECT_GE(lines, 4);
}

TEST_P(EngineFixtureTest, FitParamsLinesPerDevice) {
  const bool debian = GetParam().debian;
  auto rpc = ParseFitParamsOutput(Read(GetParam(), "fit-params-rpc.stdout"));
  ASSERT_TRUE(rpc.ok()) << rpc.error().message();
  ASSERT_EQ(rpc->size(), 2u);
  EXPECT_EQ((*rpc)[0].name, "RPC0");
  EXPECT_EQ((*rpc)[0].model_bytes, Bytes::MiB(13));
  EXPECT_EQ((*rpc)[0].context_bytes, Bytes::MiB(32));
  EXPECT_EQ((*rpc)[1].name, "Host");
  EXPECT_EQ((*rpc)[1].model_bytes, Bytes::MiB(3));
  // The one difference on this model: 0.7.0's host compute buffer is 1 MiB larger.
  EXPECT_EQ((*rpc)[1].compute_bytes, Bytes::MiB(debian ? 9 : 8));
  auto cpu = ParseFitParamsOutput(Read(GetParam(), "fit-params-cpu.stdout"));
  ASSERT_TRUE(cpu.ok()) << cpu.error().message();
  ASSERT_EQ(cpu->size(), 1u);
  EXPECT_EQ((*cpu)[0].name, "Host");
  EXPECT_EQ((*cpu)[0].total(), Bytes::MiB(16 + 32 + 12));
}

// LlamaServer::Complete streams its request: 0.4.0 refuses the plain one when
// the generated text ends inside a UTF-8 character (as on this model).
TEST_P(EngineFixtureTest, CompletionTimingsFromTheStreamedAnswer) {
  const bool debian = GetParam().debian;
  auto streamed = ParseCompletionResponse(Read(GetParam(), "server-completion-stream.txt"));
  ASSERT_TRUE(streamed.ok()) << streamed.error().message();
  EXPECT_EQ(streamed->predicted_n, 8);
  EXPECT_GT(streamed->prompt_n, 0);
  EXPECT_GT(streamed->prompt_per_second, 0);
  EXPECT_GT(streamed->predicted_per_second, 0);
  EXPECT_EQ(streamed->cache_n, 0);
  EXPECT_TRUE(streamed->content.starts_with(" x w467")) << streamed->content;
  auto plain = ParseCompletionResponse(Read(GetParam(), "server-completion-plain.json"));
  if (debian) {
    ASSERT_TRUE(plain.ok()) << plain.error().message();
    EXPECT_EQ(plain->predicted_n, 8);
    EXPECT_EQ(plain->content.substr(0, 7), streamed->content.substr(0, 7));
  } else {
    ASSERT_FALSE(plain.ok());
    EXPECT_EQ(plain.error().kind(), ErrorKind::kEngine);
    EXPECT_NE(plain.error().message().find("Content-only"), std::string::npos);
  }
}

TEST(CompletionResponseTest, StreamErrorsAndTruncation) {
  auto err = ParseCompletionResponse(
      "data: {\"content\":\"a\",\"stop\":false}\n\n"
      "data: {\"error\":{\"code\":500,\"message\":\"boom\"}}\n\n");
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.error().kind(), ErrorKind::kEngine);
  EXPECT_NE(err.error().message().find("boom"), std::string::npos);
  auto cut = ParseCompletionResponse("data: {\"content\":\"a\",\"stop\":false}\n\n");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message().find("final event"), std::string::npos);
  auto junk = ParseCompletionResponse("data: {\"content\":\"a\"\n\n");
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().kind(), ErrorKind::kFormat);
  auto ok = ParseCompletionResponse(
      ": comment\r\ndata: {\"content\":\"a\",\"stop\":false}\r\n\r\n"
      "data: {\"content\":\"b\",\"stop\":true,\"timings\":{\"predicted_n\":2,"
      "\"predicted_ms\":4,\"prompt_ms\":1}}\r\n");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->content, "ab");
  EXPECT_EQ(ok->predicted_n, 2);
  EXPECT_DOUBLE_EQ(ok->ttft_ms, 3);
}

INSTANTIATE_TEST_SUITE_P(BothEngines, EngineFixtureTest,
                         ::testing::Values(EngineFixture{"debian-0.7.0-b11669", true},
                                           EngineFixture{"bundle-0.4.0-80fb11a", false}),
                         FixtureName);

}  // namespace
}  // namespace moetune
