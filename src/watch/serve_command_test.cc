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

TEST(ServeCommandTest, PlanningNeedsAVramFigure) {
  ServePlanOptions p;
  p.profile = "/nonexistent/machine.json";
  auto r = PlannedServerConfig("/nonexistent.gguf", p, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--vram"), std::string::npos);
  // An engine with a GPU does not make up a VRAM figure either.
  p.engine_has_gpu = true;
  EXPECT_FALSE(PlannedServerConfig("/nonexistent.gguf", p, nullptr).ok());
  p.engine_has_gpu.reset();
  p.vram_free = int64_t{8} << 30;
  p.type_k = "q3_k";
  auto bad = PlannedServerConfig("/nonexistent.gguf", p, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--ctk: 'q3_k' is not a KV cache type"), std::string::npos);
}

// No GPU is a normal case: --vram 0, a profile that lists no GPU, or (without
// a profile) an engine without a GPU device plan every layer on the host, and
// the command says it with -ngl 0 and no --n-cpu-moe.
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
  zero.vram_free = 0;
  std::vector<std::string> notes;
  auto a = PlannedServerConfig(model, zero, &notes);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(host_only(*a)) << ShellJoin(ServerArgv(*a));
  int said = 0;
  for (const auto& n : notes) said += n.find("no GPU") != std::string::npos ? 1 : 0;
  EXPECT_EQ(said, 1);

  ServePlanOptions cpu_engine;
  cpu_engine.profile = dir.File("absent.json");
  cpu_engine.engine_has_gpu = false;
  notes.clear();
  auto b = PlannedServerConfig(model, cpu_engine, &notes);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(host_only(*b)) << ShellJoin(ServerArgv(*b));
  ASSERT_FALSE(notes.empty());
  EXPECT_NE(notes.front().find("the engine lists no GPU device"), std::string::npos)
      << notes.front();

  // A profile that lists no GPU (doctor on a machine without one).
  const std::string profile = dir.File("machine.json");
  ASSERT_TRUE(SaveMachineProfile(MachineProfile{}, profile).ok());
  ServePlanOptions no_gpu_profile;
  no_gpu_profile.profile = profile;
  auto c = PlannedServerConfig(model, no_gpu_profile, nullptr);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_TRUE(host_only(*c)) << ShellJoin(ServerArgv(*c));

  // With a GPU the plan is the usual one.
  ServePlanOptions gpu;
  gpu.vram_free = int64_t{8} << 30;
  auto d = PlannedServerConfig(model, gpu, nullptr);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_FALSE(host_only(*d)) << ShellJoin(ServerArgv(*d));
}

}  // namespace
}  // namespace moetune
