#include "watch/serve_command.h"

#include <gtest/gtest.h>

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
  p.vram_free = int64_t{8} << 30;
  p.type_k = "q3_k";
  auto bad = PlannedServerConfig("/nonexistent.gguf", p, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--ctk: 'q3_k' is not a KV cache type"), std::string::npos);
}

}  // namespace
}  // namespace moetune
