// Integration: `moetune demo` runs the main job end to end on the real engine,
// every step with output that is checked (its wall time is a benchmark:
// bench/wall_time.sh).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support.h"

namespace moetune::itest {
namespace {

TEST(DemoTest, CompletesWithEveryStepChecked) {
  TempDir dir;
  const std::string demo = dir.File("demo");
  std::filesystem::create_directories(demo);
  // A corrupt model cached by an "earlier run": it must be written again, not
  // reported as "the plan step is unavailable in this build".
  const std::string cached = demo + "/qwen3moe-tiny.gguf";
  std::ofstream(cached) << "GGUF, but cut short";
  const auto r = RunCommand({MoetuneBinary(), "demo", "--dir", demo, "-r", "2"}, 900);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("is unusable"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("unavailable"), std::string::npos) << r.out;

  // Step 3: the plan's own recommendation, the same as `moetune plan --json`.
  const auto plan = RunCommand(
      {MoetuneBinary(), "plan", cached, "--vram", "72MiB", "--margin", "16MiB", "--json"}, 120);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const auto j = nlohmann::json::parse(plan.out);
  ASSERT_TRUE(j["n_cpu_moe"].is_number_integer()) << plan.out;
  const int n = j["n_cpu_moe"].get<int>();
  EXPECT_NE(r.out.find("plan step: --n-cpu-moe " + std::to_string(n) + " "), std::string::npos)
      << r.out;
  // Step 4 used it: the engine's dry run at that N.
  EXPECT_NE(r.out.find("--n-cpu-moe " + std::to_string(n) + ": Host model"), std::string::npos)
      << r.out;

  EXPECT_NE(r.out.find("## 6. Summary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest pp64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest tg16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Host model"), std::string::npos) << r.out;  // the engine's dry run
  EXPECT_NE(r.out.find("; 0 failed"), std::string::npos) << r.out;
  EXPECT_TRUE(LeftoverDescendants().empty());
}

}  // namespace
}  // namespace moetune::itest
