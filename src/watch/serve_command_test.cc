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
  const auto argv =
      ServeArgv({"llama-server", "-m", "old.gguf", "-ngl", "99", "--n-cpu-moe", "12", "--host",
                 "1.2.3.4", "--port", "1", "-t", "2", "--no-slots", "--metrics", "-fa", "on"},
                o);
  EXPECT_EQ(argv, (std::vector<std::string>{"/engine/llama-server", "-m", "/models/q.gguf", "-ngl",
                                            "99", "--n-cpu-moe", "12", "-fa", "on", "-t", "6",
                                            "--host", "0.0.0.0", "--port", "9000", "--metrics"}));
  EXPECT_EQ(FlagValue(argv, {"--n-cpu-moe", "-ncmoe"}), "12");
  EXPECT_FALSE(FlagValue(argv, {"-c"}).has_value());
}

TEST(ServeCommandTest, PlanningNeedsAVramFigure) {
  ServePlanOptions p;
  p.profile = "/nonexistent/machine.json";
  auto r = PlannedServerCommand("/nonexistent.gguf", p, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("--vram"), std::string::npos);
  p.vram_free = int64_t{8} << 30;
  p.type_k = "q3_k";
  auto bad = PlannedServerCommand("/nonexistent.gguf", p, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--ctk: 'q3_k' is not a KV cache type"), std::string::npos);
}

}  // namespace
}  // namespace moetune
