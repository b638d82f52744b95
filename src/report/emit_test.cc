#include "report/emit.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "config/server_argv.h"
#include "report/emit_test_util.h"

namespace moetune {
namespace {

using testing::ArgvFromCompose;
using testing::ArgvFromEnv;
using testing::ArgvFromIni;
using testing::ShellWords;

// A plan's configuration with the regex that breaks naive quoting in every format.
ServerConfig PlanConfig() {
  ServerConfig c;
  c.model = "/models dir/Qwen3 30B's.gguf";
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 10;
  c.placement.overrides = {{"blk\\.(1[0-9])\\.ffn_.*_exps", "CPU"}};
  c.ctx_size = 32768;
  c.n_parallel = 1;
  c.flash_attn = FlashAttn::kOn;
  c.type_k = ggml_type::kQ8_0;
  c.fit = Switch::kOff;
  return c;
}

// Its command, as plan prints it.
std::vector<std::string> PlanArgv() {
  return {"llama-server",
          "-m",
          "/models dir/Qwen3 30B's.gguf",
          "-ngl",
          "99",
          "--n-cpu-moe",
          "10",
          "-ot",
          "blk\\.(1[0-9])\\.ffn_.*_exps=CPU",
          "-c",
          "32768",
          "-np",
          "1",
          "-ub",
          "512",
          "-b",
          "2048",
          "-fa",
          "on",
          "-ctk",
          "q8_0",
          "-fit",
          "off"};
}

EmitContext Context() {
  EmitContext c;
  c.header = {"planned by moetune 0.1.0 for llama.cpp 0.7.0 (build 11669)"};
  return c;
}

std::string Emit(EmitFormat f, const ServerConfig& config) {
  auto r = EmitServerConfig(f, config, Context());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : "";
}

TEST(Emit, TheCommandIsTheOneWritersAndReadsBack) {
  EXPECT_EQ(ServerArgv(PlanConfig()), PlanArgv());
  EXPECT_EQ(ParseServerArgv(PlanArgv()).config, PlanConfig());
}

TEST(Emit, BadFormatNamesAreErrors) {
  auto bad = ParseEmitFormat("yaml");
  ASSERT_FALSE(bad.ok());
  for (EmitFormat f : EmitFormats()) {
    EXPECT_NE(bad.error().message().find(EmitFormatName(f)), std::string::npos)
        << EmitFormatName(f);
    EXPECT_EQ(*ParseEmitFormat(EmitFormatName(f)), f);
  }
  EXPECT_EQ(EmitFormats().size(), 10u);
  EXPECT_EQ(*ParseEmitFormat("compose"), EmitFormat::kCompose);
}

TEST(Emit, EveryFormatParsesBackToTheSameArgv) {
  const ServerConfig config = PlanConfig();
  const auto argv = PlanArgv();
  EXPECT_EQ(ShellWords(Emit(EmitFormat::kServer, config)), argv);
  EXPECT_EQ(ArgvFromEnv(Emit(EmitFormat::kEnv, config)), argv);
  std::string section;
  EXPECT_EQ(ArgvFromIni(Emit(EmitFormat::kIni, config), &section), argv);
  EXPECT_EQ(section, "Qwen3 30B's");
  auto compose = ComposeServerArgv(config);
  ASSERT_TRUE(compose.ok());
  EXPECT_EQ(ArgvFromCompose(Emit(EmitFormat::kCompose, config)), *compose);
  // The compose argv is the command with the mounted model path and the image's port.
  std::vector<std::string> expected = argv;
  expected[2] = "/models/Qwen3 30B's.gguf";
  expected.insert(expected.end(), {"--port", "8080"});
  EXPECT_EQ(*compose, expected);
}

// Four slots sharing one cache: -kvu is a switch, without a value.
ServerConfig SlotsConfig() {
  ServerConfig c;
  c.model = "/models/m.gguf";
  c.placement.n_cpu_moe = 4;
  c.ctx_size = 16384;
  c.n_parallel = 4;
  c.kv_unified = Switch::kOn;
  c.threads = 6;
  c.fit = Switch::kOff;
  return c;
}

std::vector<std::string> SlotsArgv() {
  return {
      "llama-server", "-m", "/models/m.gguf", "-ngl", "99",  "--n-cpu-moe", "4",    "-c", "16384",
      "-np",          "4",  "-kvu",           "-ub",  "512", "-b",          "2048", "-t", "6",
      "-fit",         "off"};
}

TEST(Emit, SwitchIsAFlagWithoutValue) {
  EXPECT_EQ(ServerArgv(SlotsConfig()), SlotsArgv());
  const auto p =
      ParseServerArgv({"llama-server", "--kv-unified", "-np", "4", "-m", "m.gguf", "-kvu"});
  EXPECT_EQ(p.config.kv_unified, Switch::kOn);
  EXPECT_TRUE(p.invalid.empty());
}

TEST(Emit, SwitchInEveryFormat) {
  const auto argv = SlotsArgv();
  const ServerConfig config = SlotsConfig();
  const std::string server = Emit(EmitFormat::kServer, config);
  EXPECT_NE(server.find(" \\\n  -kvu \\\n  -ub 512"), std::string::npos) << server;
  EXPECT_EQ(ShellWords(server), argv);
  const std::string env = Emit(EmitFormat::kEnv, config);
  EXPECT_NE(env.find("\nLLAMA_ARG_KV_UNIFIED=true\n"), std::string::npos) << env;
  EXPECT_EQ(ArgvFromEnv(env), argv);
  const std::string ini = Emit(EmitFormat::kIni, config);
  EXPECT_NE(ini.find("\nkv-unified = true\n"), std::string::npos) << ini;
  EXPECT_EQ(ArgvFromIni(ini), argv);
  const std::string compose = Emit(EmitFormat::kCompose, config);
  EXPECT_NE(compose.find("      - \"-np\"\n      - \"4\"\n      - \"-kvu\"\n      - \"-ub\"\n"),
            std::string::npos)
      << compose;
  auto inner = ComposeServerArgv(config);
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(ArgvFromCompose(compose), *inner);
  EXPECT_EQ(std::count(inner->begin(), inner->end(), "-kvu"), 1);
}

TEST(Emit, RegexIsQuotedInEveryFormat) {
  const auto argv = PlanConfig();
  const std::string re = "blk\\.(1[0-9])\\.ffn_.*_exps=CPU";
  EXPECT_NE(Emit(EmitFormat::kServer, argv).find("'" + re + "'"), std::string::npos);
  EXPECT_NE(Emit(EmitFormat::kEnv, argv).find("LLAMA_ARG_OVERRIDE_TENSOR='" + re + "'"),
            std::string::npos);
  // Presets have no quoting: the value is written as is.
  EXPECT_NE(Emit(EmitFormat::kIni, argv).find("override-tensor = " + re + "\n"), std::string::npos);
  // YAML double quotes escape backslashes.
  EXPECT_NE(Emit(EmitFormat::kCompose, argv).find("- \"blk\\\\.(1[0-9])\\\\.ffn_.*_exps=CPU\""),
            std::string::npos);
}

TEST(Emit, DollarAndQuotesSurviveCompose) {
  ServerConfig config;
  config.model = "/m/it's.gguf";
  config.placement.overrides = {{"blk\\.3\\.ffn_up_exps$", "CPU"}};
  const auto argv = ServerArgv(config);
  const std::string yaml = Emit(EmitFormat::kCompose, config);
  EXPECT_NE(yaml.find("exps$$=CPU"), std::string::npos) << yaml;  // compose interpolation
  EXPECT_NE(yaml.find("\"/models/it's.gguf\""), std::string::npos) << yaml;
  EXPECT_EQ(ArgvFromCompose(yaml), *ComposeServerArgv(config));
  EXPECT_EQ(ArgvFromEnv(Emit(EmitFormat::kEnv, config)), argv);
  EXPECT_EQ(ShellWords(Emit(EmitFormat::kServer, config)), argv);
}

TEST(Emit, EveryOutputNamesTheVersion) {
  for (auto f : EmitFormats()) {
    EXPECT_NE(Emit(f, PlanConfig()).find("llama.cpp 0.7.0 (build 11669)"), std::string::npos)
        << EmitFormatName(f);
  }
}

// Item 8 of issue 20: a configuration with RPC servers says, in every format
// that starts the server, what to run on each host and that the backend is
// not for untrusted networks.
TEST(Emit, RpcHostsGetTheirServerCommandInEveryFormat) {
  ServerConfig c = PlanConfig();
  c.rpc = {"10.0.0.2:50052", "[fd00::3]:50053"};
  int carried = 0;
  for (auto f : EmitFormats()) {
    auto r = EmitServerConfig(f, c, Context());
    if (!r.ok()) continue;  // a format that cannot carry --rpc says so (tested elsewhere)
    if (f == EmitFormat::kOllama) {
      EXPECT_EQ(r->find("ggml-rpc-server -H"), std::string::npos) << *r;
      continue;
    }
    ++carried;
    EXPECT_NE(r->find("on 10.0.0.2: ggml-rpc-server -H 10.0.0.2 -p 50052"), std::string::npos)
        << EmitFormatName(f) << "\n"
        << *r;
    EXPECT_NE(r->find("on fd00::3: ggml-rpc-server -H fd00::3 -p 50053"), std::string::npos)
        << EmitFormatName(f);
    EXPECT_NE(r->find("no authentication"), std::string::npos) << EmitFormatName(f);
  }
  EXPECT_GE(carried, 5);
  // Comments only: the server command itself is unchanged.
  EXPECT_EQ(ShellWords(Emit(EmitFormat::kServer, c)), ServerArgv(c));
  // Without RPC servers, no such lines.
  EXPECT_EQ(Emit(EmitFormat::kServer, PlanConfig()).find("ggml-rpc-server"), std::string::npos);
  c.rpc = {"not-an-endpoint"};
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kServer, c, Context()).ok());
}

TEST(Emit, ComposeImageFollowsTheGpu) {
  EmitContext c = Context();
  auto gpu = EmitServerConfig(EmitFormat::kCompose, PlanConfig(), c);
  ASSERT_TRUE(gpu.ok());
  EXPECT_NE(gpu->find("image: ghcr.io/ggml-org/llama.cpp:server-cuda\n"), std::string::npos);
  EXPECT_NE(gpu->find("driver: nvidia"), std::string::npos);
  EXPECT_NE(gpu->find("source: \"/models dir\""), std::string::npos) << *gpu;
  c.gpu = false;
  auto cpu = EmitServerConfig(EmitFormat::kCompose, PlanConfig(), c);
  ASSERT_TRUE(cpu.ok());
  EXPECT_NE(cpu->find("image: ghcr.io/ggml-org/llama.cpp:server\n"), std::string::npos);
  EXPECT_EQ(cpu->find("nvidia"), std::string::npos);
  // A port given by the command is kept and published.
  ServerConfig with = PlanConfig();
  with.port = 9000;
  auto with_port = EmitServerConfig(EmitFormat::kCompose, with, c);
  ASSERT_TRUE(with_port.ok());
  EXPECT_NE(with_port->find("- \"9000:9000\""), std::string::npos) << *with_port;
  EXPECT_EQ(with_port->find("8080"), std::string::npos) << *with_port;
}

TEST(Emit, ValuesAFormatCannotCarryAreErrors) {
  // A preset value ends at ';' or '#' in llama.cpp's reader.
  ServerConfig config = PlanConfig();
  config.model = "/models/a;b.gguf";
  auto ini = EmitServerConfig(EmitFormat::kIni, config, Context());
  ASSERT_FALSE(ini.ok());
  EXPECT_NE(ini.error().message().find("a;b.gguf"), std::string::npos);
  // The other formats quote it.
  const auto argv = ServerArgv(config);
  EXPECT_EQ(ArgvFromEnv(Emit(EmitFormat::kEnv, config)), argv);
  EXPECT_EQ(ShellWords(Emit(EmitFormat::kServer, config)), argv);
  // -no-kvu has no environment variable of its own.
  ServerConfig no_kvu = PlanConfig();
  no_kvu.kv_unified = Switch::kOff;
  auto env = EmitServerConfig(EmitFormat::kEnv, no_kvu, Context());
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.error().message().find("-no-kvu"), std::string::npos);
  // A line break would start a new line of configuration.
  config = PlanConfig();
  config.model = "/models/a\nLLAMA_ARG_PORT=1.gguf";
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kEnv, config, Context()).ok());
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kIni, config, Context()).ok());
  // compose escapes it (\n in a YAML double-quoted scalar).
  EXPECT_EQ(ArgvFromCompose(Emit(EmitFormat::kCompose, config)), *ComposeServerArgv(config));
  // Without a model there is nothing to mount.
  ServerConfig none;
  none.ctx_size = 1;
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kCompose, none, Context()).ok());
}

TEST(Emit, HeaderLinesStayComments) {
  EmitContext c;
  c.header = {"first\nLLAMA_ARG_PORT=1"};
  auto env = EmitServerConfig(EmitFormat::kEnv, PlanConfig(), c);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->find("\nLLAMA_ARG_PORT"), std::string::npos) << *env;
  EXPECT_EQ(ArgvFromEnv(*env), PlanArgv());
}

}  // namespace
}  // namespace moetune
