// Integration: `moetune demo` runs the main job end to end on the real engine,
// every step with output that is checked (its wall time is a benchmark:
// bench/wall_time.sh).
#include <gtest/gtest.h>

#include <cstdio>
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

  // Step 7, the end of the main job: a tune on a simulated GPU machine and one
  // with the real engine on this CPU, side by side, each with its command.
  const auto tune_at = r.out.find("## 7. Tune");
  ASSERT_NE(tune_at, std::string::npos) << r.out;
  EXPECT_GT(tune_at, r.out.find("## 6. Summary"));
  EXPECT_NE(r.out.find("--engine sim --seed 1 --machine rtx4070-12g"), std::string::npos) << r.out;
  // The tiny model fits the simulated 12 GB card; the CPU engine has no GPU,
  // so the real tune keeps every layer on the host: -ngl 0 and no --n-cpu-moe
  // (printed as -1 on the tune step line).
  int sim_n = -1, sim_t = -1, real_n = -1, real_t = -1;
  const auto line = r.out.find("tune step: ");
  ASSERT_NE(line, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + line,
                        "tune step: simulated --n-cpu-moe %d -t %d; real --n-cpu-moe %d -t %d",
                        &sim_n, &sim_t, &real_n, &real_t),
            4)
      << r.out.substr(line, 120);
  EXPECT_LE(sim_n, 1);
  EXPECT_EQ(real_n, -1);
  EXPECT_NE(r.out.find("none, -ngl 0 (no GPU: not measured)"), std::string::npos) << r.out;
  const auto real_pick = r.out.find("real CPU pick:\n    llama-server -m ");
  ASSERT_NE(real_pick, std::string::npos) << r.out;
  const std::string real_cmd =
      r.out.substr(real_pick, r.out.find('\n', real_pick + 20) - real_pick);
  EXPECT_NE(real_cmd.find(" -ngl 0 "), std::string::npos) << real_cmd;
  EXPECT_EQ(real_cmd.find("n-cpu-moe"), std::string::npos) << real_cmd;
  EXPECT_GE(real_t, 1);
  EXPECT_NE(r.out.find("SIMULATED NVIDIA GeForce RTX 4070 12 GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("real CPU pick:\n    llama-server -m "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("simulated pick:\n    llama-server -m "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(no GPU: not measured)"), std::string::npos) << r.out;
  // Both tunes kept their journals in the demo folder.
  EXPECT_TRUE(std::filesystem::exists(demo + "/tune-sim.journal"));
  EXPECT_TRUE(std::filesystem::exists(demo + "/tune-cpu.journal"));
  EXPECT_NE(r.out.find("demo finished in"), std::string::npos) << r.out;
  EXPECT_TRUE(LeftoverDescendants().empty());

  // An unknown what-if machine is a bad command line, refused before any step
  // runs (exit 2), naming the flag and the value.
  const auto bad = RunCommand(
      {MoetuneBinary(), "demo", "--dir", demo, "-r", "1", "--sim-machine", "gpu-of-the-future"},
      900);
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("--sim-machine"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("gpu-of-the-future"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out.find("## 1."), std::string::npos) << bad.out;
  EXPECT_TRUE(LeftoverDescendants().empty());
}

}  // namespace
}  // namespace moetune::itest
