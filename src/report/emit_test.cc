#include "report/emit.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "report/emit_test_util.h"

namespace moetune {
namespace {

using testing::ArgvFromCompose;
using testing::ArgvFromEnv;
using testing::ArgvFromIni;
using testing::ShellWords;

// A plan's command with the regex that breaks naive quoting in every format.
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

std::string Emit(EmitFormat f, const std::vector<std::string>& argv) {
  auto r = EmitServerConfig(f, argv, Context());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : "";
}

TEST(Emit, CanonicalOrderJoinsRepeatedOverrides) {
  auto c = CanonicalServerArgv({"llama-server", "-fit", "off", "--ctx-size", "4096", "-m", "m.gguf",
                                "-ot", "a=CPU", "--override-tensor", "b=CPU", "-ncmoe", "3"});
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(*c, (std::vector<std::string>{"llama-server", "-m", "m.gguf", "--n-cpu-moe", "3", "-ot",
                                          "a=CPU,b=CPU", "-c", "4096", "-fit", "off"}));
  // The plan's own order is already canonical.
  auto p = CanonicalServerArgv(PlanArgv());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, PlanArgv());
}

TEST(Emit, BadCommandsAreErrors) {
  EXPECT_FALSE(CanonicalServerArgv({}).ok());
  auto unknown = CanonicalServerArgv({"llama-server", "--frobnicate", "1"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("--frobnicate"), std::string::npos);
  EXPECT_FALSE(CanonicalServerArgv({"llama-server", "-c"}).ok());
  auto twice = CanonicalServerArgv({"llama-server", "-c", "1", "-c", "2"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message().find("twice"), std::string::npos);
  EXPECT_FALSE(ParseEmitFormat("yaml").ok());
  EXPECT_EQ(*ParseEmitFormat("compose"), EmitFormat::kCompose);
}

TEST(Emit, EveryFormatParsesBackToTheSameArgv) {
  const auto argv = PlanArgv();
  EXPECT_EQ(ShellWords(Emit(EmitFormat::kServer, argv)), argv);
  EXPECT_EQ(ArgvFromEnv(Emit(EmitFormat::kEnv, argv)), argv);
  std::string section;
  EXPECT_EQ(ArgvFromIni(Emit(EmitFormat::kIni, argv), &section), argv);
  EXPECT_EQ(section, "Qwen3 30B's");
  auto compose = ComposeServerArgv(argv);
  ASSERT_TRUE(compose.ok());
  EXPECT_EQ(ArgvFromCompose(Emit(EmitFormat::kCompose, argv)), *compose);
  // The compose argv is the command with the mounted model path and the image's port.
  std::vector<std::string> expected = argv;
  expected[2] = "/models/Qwen3 30B's.gguf";
  expected.insert(expected.end(), {"--port", "8080"});
  EXPECT_EQ(*compose, expected);
}

// Four slots sharing one cache: -kvu is a switch, without a value.
std::vector<std::string> SlotsArgv() {
  return {"llama-server", "-m", "/models/m.gguf", "-ngl", "99", "--n-cpu-moe", "4",  "-c", "16384",
          "-np",          "4",  "-kvu",           "-t",   "6",  "-fit",        "off"};
}

TEST(Emit, SwitchIsAFlagWithoutValue) {
  auto c =
      CanonicalServerArgv({"llama-server", "--kv-unified", "-np", "4", "-m", "m.gguf", "-kvu"});
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(*c, (std::vector<std::string>{"llama-server", "-m", "m.gguf", "-np", "4", "-kvu"}));
  EXPECT_EQ(*CanonicalServerArgv(SlotsArgv()), SlotsArgv());
  // A switch at the end is complete; a value flag there is not.
  EXPECT_TRUE(CanonicalServerArgv({"llama-server", "-kvu"}).ok());
  EXPECT_FALSE(CanonicalServerArgv({"llama-server", "-kvu", "-np"}).ok());
}

TEST(Emit, SwitchInEveryFormat) {
  const auto argv = SlotsArgv();
  const std::string server = Emit(EmitFormat::kServer, argv);
  EXPECT_NE(server.find(" \\\n  -kvu \\\n  -t 6"), std::string::npos) << server;
  EXPECT_EQ(ShellWords(server), argv);
  const std::string env = Emit(EmitFormat::kEnv, argv);
  EXPECT_NE(env.find("\nLLAMA_ARG_KV_UNIFIED=true\n"), std::string::npos) << env;
  EXPECT_EQ(ArgvFromEnv(env), argv);
  const std::string ini = Emit(EmitFormat::kIni, argv);
  EXPECT_NE(ini.find("\nkv-unified = true\n"), std::string::npos) << ini;
  EXPECT_EQ(ArgvFromIni(ini), argv);
  const std::string compose = Emit(EmitFormat::kCompose, argv);
  EXPECT_NE(compose.find("      - '-np'\n      - '4'\n      - '-kvu'\n      - '-t'\n"),
            std::string::npos)
      << compose;
  auto inner = ComposeServerArgv(argv);
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(ArgvFromCompose(compose), *inner);
  EXPECT_EQ(std::count(inner->begin(), inner->end(), "-kvu"), 1);
}

TEST(Emit, RegexIsQuotedInEveryFormat) {
  const auto argv = PlanArgv();
  const std::string re = "blk\\.(1[0-9])\\.ffn_.*_exps=CPU";
  EXPECT_NE(Emit(EmitFormat::kServer, argv).find("'" + re + "'"), std::string::npos);
  EXPECT_NE(Emit(EmitFormat::kEnv, argv).find("LLAMA_ARG_OVERRIDE_TENSOR='" + re + "'"),
            std::string::npos);
  // Presets have no quoting: the value is written as is.
  EXPECT_NE(Emit(EmitFormat::kIni, argv).find("override-tensor = " + re + "\n"), std::string::npos);
  // YAML single quotes keep backslashes literal.
  EXPECT_NE(Emit(EmitFormat::kCompose, argv).find("- '" + re + "'"), std::string::npos);
}

TEST(Emit, DollarAndQuotesSurviveCompose) {
  std::vector<std::string> argv = {"llama-server", "-m", "/m/it's.gguf", "-ot",
                                   "blk\\.3\\.ffn_up_exps$=CPU"};
  const std::string yaml = Emit(EmitFormat::kCompose, argv);
  EXPECT_NE(yaml.find("exps$$=CPU"), std::string::npos) << yaml;  // compose interpolation
  EXPECT_NE(yaml.find("'/models/it''s.gguf'"), std::string::npos) << yaml;
  EXPECT_EQ(ArgvFromCompose(yaml), *ComposeServerArgv(argv));
  EXPECT_EQ(ArgvFromEnv(Emit(EmitFormat::kEnv, argv)), argv);
  EXPECT_EQ(ShellWords(Emit(EmitFormat::kServer, argv)), argv);
}

TEST(Emit, EveryOutputNamesTheVersion) {
  for (auto f : {EmitFormat::kServer, EmitFormat::kEnv, EmitFormat::kIni, EmitFormat::kCompose}) {
    EXPECT_NE(Emit(f, PlanArgv()).find("llama.cpp 0.7.0 (build 11669)"), std::string::npos)
        << EmitFormatName(f);
  }
}

TEST(Emit, ComposeImageFollowsTheGpu) {
  EmitContext c = Context();
  auto gpu = EmitServerConfig(EmitFormat::kCompose, PlanArgv(), c);
  ASSERT_TRUE(gpu.ok());
  EXPECT_NE(gpu->find("image: ghcr.io/ggml-org/llama.cpp:server-cuda\n"), std::string::npos);
  EXPECT_NE(gpu->find("driver: nvidia"), std::string::npos);
  EXPECT_NE(gpu->find("source: '/models dir'"), std::string::npos) << *gpu;
  c.gpu = false;
  auto cpu = EmitServerConfig(EmitFormat::kCompose, PlanArgv(), c);
  ASSERT_TRUE(cpu.ok());
  EXPECT_NE(cpu->find("image: ghcr.io/ggml-org/llama.cpp:server\n"), std::string::npos);
  EXPECT_EQ(cpu->find("nvidia"), std::string::npos);
  // A port given by the command is kept and published.
  auto argv = PlanArgv();
  argv.insert(argv.end(), {"--port", "9000"});
  auto with_port = EmitServerConfig(EmitFormat::kCompose, argv, c);
  ASSERT_TRUE(with_port.ok());
  EXPECT_NE(with_port->find("- '9000:9000'"), std::string::npos) << *with_port;
  EXPECT_EQ(with_port->find("8080"), std::string::npos) << *with_port;
}

TEST(Emit, ValuesAFormatCannotCarryAreErrors) {
  // A preset value ends at ';' or '#' in llama.cpp's reader.
  auto argv = PlanArgv();
  argv[2] = "/models/a;b.gguf";
  auto ini = EmitServerConfig(EmitFormat::kIni, argv, Context());
  ASSERT_FALSE(ini.ok());
  EXPECT_NE(ini.error().message().find("a;b.gguf"), std::string::npos);
  // The other formats quote it.
  EXPECT_EQ(ArgvFromEnv(Emit(EmitFormat::kEnv, argv)), argv);
  EXPECT_EQ(ShellWords(Emit(EmitFormat::kServer, argv)), argv);
  // -tb has no environment variable.
  auto tb =
      EmitServerConfig(EmitFormat::kEnv, {"llama-server", "-m", "m.gguf", "-tb", "4"}, Context());
  ASSERT_FALSE(tb.ok());
  EXPECT_NE(tb.error().message().find("-tb"), std::string::npos);
  // A line break would start a new line of configuration.
  argv = PlanArgv();
  argv[2] = "/models/a\nLLAMA_ARG_PORT=1.gguf";
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kEnv, argv, Context()).ok());
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kIni, argv, Context()).ok());
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kCompose, argv, Context()).ok());
  // Without a model there is nothing to mount.
  EXPECT_FALSE(EmitServerConfig(EmitFormat::kCompose, {"llama-server", "-c", "1"}, Context()).ok());
}

TEST(Emit, HeaderLinesStayComments) {
  EmitContext c;
  c.header = {"first\nLLAMA_ARG_PORT=1"};
  auto env = EmitServerConfig(EmitFormat::kEnv, PlanArgv(), c);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ(env->find("\nLLAMA_ARG_PORT"), std::string::npos) << *env;
  EXPECT_EQ(ArgvFromEnv(*env), PlanArgv());
}

TEST(Emit, FlagTableIsConsistent) {
  for (const auto& f : KnownServerFlags()) {
    EXPECT_EQ(FindServerFlag(f.spelling), &f);
    EXPECT_EQ(FindServerFlag(f.long_name), &f);
    EXPECT_EQ(std::string(f.long_name).rfind("--", 0), 0u) << f.long_name;
    if (f.env) {
      EXPECT_EQ(std::string(f.env).rfind("LLAMA_ARG_", 0), 0u) << f.env;
    }
  }
  EXPECT_FALSE(FindServerFlag("-kvu")->takes_value());
  EXPECT_EQ(PresetKey(*FindServerFlag("-kvu")), "kv-unified");
  EXPECT_EQ(FindServerFlag("-ot")->arity, FlagArity::kList);
  EXPECT_EQ(PresetKey(*FindServerFlag("-ngl")), "n-gpu-layers");
  EXPECT_EQ(FindServerFlag("-ncmoe"), FindServerFlag("--n-cpu-moe"));
  EXPECT_EQ(FindServerFlag("--nope"), nullptr);
}

}  // namespace
}  // namespace moetune
