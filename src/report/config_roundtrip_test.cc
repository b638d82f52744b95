// One ServerConfig with every field set goes through every place a
// configuration is written and read: the printed command, every --emit
// format, serve's argv, watch's parse of that argv, and the tune JSON. Each
// comes back as the same configuration.
#include <gtest/gtest.h>

#include "config/server_argv.h"
#include "report/emit.h"
#include "report/emit_test_util.h"
#include "report/tune_report.h"
#include "tune/tune_reader.h"
#include "watch/serve_command.h"
#include "watch/server_settings.h"

namespace moetune {
namespace {

using testing::ArgvFromCompose;
using testing::ArgvFromEnv;
using testing::ArgvFromIni;
using testing::ShellWords;

ServerConfig EveryField() {
  ServerConfig c;
  c.model = "/models/Qwen3 30B.gguf";
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 12;
  c.placement.fine_fill = {{11, {"ffn_up_exps", "ffn_gate_exps"}}};  // the fine fill
  c.ctx_size = 65536;
  c.n_parallel = 4;  // -np 4 -kvu
  c.kv_unified = Switch::kOn;
  c.n_ubatch = 1024;
  c.n_batch = 4096;
  c.flash_attn = FlashAttn::kOn;
  c.type_k = c.type_v = ggml_type::kQ8_0;  // q8_0 KV
  c.threads = 6;
  c.load_mode = LoadMode::kNone;  // -lm none
  c.fit = Switch::kOff;
  c.rpc = {"10.0.0.2:50052"};
  c.host = "127.0.0.1";
  c.port = 8081;
  c.metrics = true;
  return c;
}

// The configuration an argument vector says, and that it says nothing else.
ServerConfig Parsed(const std::vector<std::string>& argv) {
  const ParsedServerCommand p = ParseServerArgv(argv);
  EXPECT_TRUE(p.other.empty());
  EXPECT_TRUE(p.invalid.empty());
  EXPECT_TRUE(p.not_understood.empty());
  return p.config;
}

std::string Emitted(EmitFormat f, const ServerConfig& c) {
  EmitContext ctx;
  ctx.header = {"test"};
  auto e = EmitServerConfig(f, c, ctx);
  EXPECT_TRUE(e.ok()) << EmitFormatName(f) << ": " << (e.ok() ? "" : e.error().message());
  return e.ok() ? *e : "";
}

TEST(OneConfiguration, EveryWriterAndReaderAgree) {
  const ServerConfig c = EveryField();
  const std::vector<std::string> argv = ServerArgv(c);

  // The printed command, as the shell reads it back.
  EXPECT_EQ(Parsed(ShellWords(ShellJoin(argv))), c);

  // Every --emit format.
  EXPECT_EQ(Parsed(ShellWords(Emitted(EmitFormat::kServer, c))), c);
  EXPECT_EQ(Parsed(ArgvFromEnv(Emitted(EmitFormat::kEnv, c))), c);
  EXPECT_EQ(Parsed(ArgvFromIni(Emitted(EmitFormat::kIni, c))), c);
  ServerConfig in_container = c;
  in_container.model = "/models/Qwen3 30B.gguf";  // the model's folder is mounted at /models
  EXPECT_EQ(Parsed(ArgvFromCompose(Emitted(EmitFormat::kCompose, c))), in_container);

  // serve's argv for the same configuration.
  ServeCommandOptions o;
  o.server_path = "/engine/llama-server";
  o.model = c.model;
  o.host = c.host;
  o.port = c.port;
  o.threads = c.threads;
  std::vector<std::string> dropped;
  const auto serve = ServeArgv(ConfigFromCommand(argv, &dropped), o);
  EXPECT_TRUE(dropped.empty());
  EXPECT_EQ(Parsed(serve), c);

  // watch's parse of that argv, as /proc shows it: the same settings as tuned.
  const ServerSettings running = SettingsFromArgv(serve);
  EXPECT_EQ(running.config, c);
  EXPECT_TRUE(CompareSettings(SettingsFromArgv(argv), running).empty());
  EXPECT_EQ(running.NCpuMoe(), 12);
  EXPECT_EQ(running.NUbatch(), 1024);

  // The tune JSON, written and read back.
  TuneReport t;
  t.model_path = c.model;
  t.ctx = c.ctx_size;
  t.result.best = c;
  auto read = TuneReportFromJson(nlohmann::json::parse(TuneJson(t).dump()));
  ASSERT_TRUE(read.ok()) << read.error().message();
  EXPECT_EQ(read->result.best, c);
  EXPECT_EQ(read->Command(), argv);
}

}  // namespace
}  // namespace moetune
