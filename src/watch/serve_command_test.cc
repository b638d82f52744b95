#include "watch/serve_command.h"

#include <gtest/gtest.h>

#include "config/server_argv.h"
#include "hw/machine_profile.h"
#include "model/synth.h"
#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

TEST(ServeCommandTest, TheTunedCommandWithTheEnginesServer) {
  ServeCommandOptions o;
  o.server_path = "/engine/llama-server";
  o.model = "/models/q.gguf";
  o.host = "0.0.0.0";
  o.port = 9000;
  o.threads = 6;
  std::vector<std::string> dropped;
  const ServerConfig base = ConfigFromCommand(
      {"llama-server", "-m",      "old.gguf", "-ngl",   "99",       "--n-cpu-moe", "12",
       "--host",       "1.2.3.4", "--port",   "1",      "-t",       "2",           "--no-slots",
       "--metrics",    "-fa",     "on",       "--path", "/srv/www", "--log-file",  "/etc/x",
       "--api-key",    "k",       "--jinja"},
      &dropped);
  const auto argv = ServeArgv(base, o);
  EXPECT_EQ(argv, (std::vector<std::string>{"/engine/llama-server",
                                            "-m",
                                            "/models/q.gguf",
                                            "-ngl",
                                            "99",
                                            "--n-cpu-moe",
                                            "12",
                                            "-ub",
                                            "512",
                                            "-b",
                                            "2048",
                                            "-fa",
                                            "on",
                                            "-t",
                                            "6",
                                            "--host",
                                            "0.0.0.0",
                                            "--port",
                                            "9000",
                                            "--metrics"}));
  // Only what a configuration holds is started; the rest is said.
  EXPECT_EQ(dropped, (std::vector<std::string>{"--no-slots", "--log-file", "/etc/x", "--api-key",
                                               "k", "--path", "/srv/www", "--jinja"}));
}

// A bad cache type is named; the budget comes resolved (plan/gpu_budget.h,
// whose own tests cover where each figure comes from).
TEST(ServeCommandTest, ABadCacheTypeIsNamed) {
  ServePlanOptions p;
  p.gpu.total = int64_t{8} << 30;
  p.type_k = "q3_k";
  auto bad = PlannedServerConfig("/nonexistent.gguf", p, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--ctk: 'q3_k' is not a KV cache type"), std::string::npos);
}

// No GPU is a normal case: a budget with no GPU (--vram 0, a profile that
// lists none, an engine without a device) plans every layer on the host, says
// so once, and the command says it with -ngl 0 and no --n-cpu-moe; the GPU
// budget is the first note.
TEST(ServeCommandTest, NoGpuServesEveryLayerFromTheHost) {
  testing::TempDir dir;
  const std::string model = dir.File("tiny.gguf");
  SynthOptions so;
  so.spec = ScaleSynthSpec(*SynthPreset("qwen3moe"), SynthScale{});
  ASSERT_TRUE(WriteSynthModel(so, model).ok());
  auto host_only = [](const ServerConfig& c) {
    const std::string cmd = ShellJoin(ServerArgv(c));
    return cmd.find(" -ngl 0 ") != std::string::npos && cmd.find("n-cpu-moe") == std::string::npos;
  };

  ServePlanOptions zero;
  zero.gpu.total_from = "the engine lists no GPU device";
  std::vector<std::string> notes;
  auto a = PlannedServerConfig(model, zero, &notes);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(host_only(*a)) << ShellJoin(ServerArgv(*a));
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes.front(), "GPU memory: none (the engine lists no GPU device)");
  int said = 0;
  for (const auto& n : notes) said += n.rfind("no GPU:", 0) == 0 ? 1 : 0;
  EXPECT_EQ(said, 1);

  // With a GPU the plan is the usual one, within total - used - reserve.
  ServePlanOptions gpu;
  gpu.gpu.total = int64_t{12} << 30;
  gpu.gpu.used = int64_t{4} << 30;
  notes.clear();
  auto d = PlannedServerConfig(model, gpu, &notes);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_FALSE(host_only(*d)) << ShellJoin(ServerArgv(*d));
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes.front().rfind("GPU budget 8.00 GiB = 12.00 GiB total", 0), 0u) << notes.front();
}

}  // namespace
}  // namespace moetune
