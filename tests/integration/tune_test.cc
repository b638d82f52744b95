// Integration: `moetune tune` with the real engine on a synthesized model.
// Killed with SIGKILL midway and started again, it finishes without measuring
// again what the journal holds; its pick is measured against llama.cpp's
// defaults in the same run; bad journals and values are refused.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

using json = nlohmann::json;

int ResultLines(const std::string& journal) {
  std::ifstream f(journal);
  std::string line;
  int n = 0;
  while (std::getline(f, line)) n += line.find("\"result\"") != std::string::npos ? 1 : 0;
  return n;
}

class TuneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(EngineDir().has_value()) << "llama.cpp not found: run scripts/setup-engine.sh";
    model_ = dir_.File("m.gguf");
    auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::vector<std::string> Tune(const std::string& journal) {
    // A short workload keeps the micro-batch phase out (prompts under 512 tokens).
    return {
        MoetuneBinary(), "tune",   model_,         "--ctx", "1024",      "--workload", "256:64",
        "--budget",      "10",     "-r",           "2",     "--threads", "1,2",        "--journal",
        journal,         "--json", "--no-progress"};
  }
  TempDir dir_;
  std::string model_;
};

TEST_F(TuneCli, KilledMidwayResumesWithoutMeasuringAgain) {
  const std::string journal = dir_.File("tune.journal");
  SpawnOptions s;
  s.argv = Tune(journal);
  s.stdout_mode = OutputMode::kDiscard;
  s.stderr_mode = OutputMode::kDiscard;
  auto child = ChildProcess::Spawn(s);
  ASSERT_TRUE(child.ok()) << child.error().message();
  // Let a few measurements land in the journal, then kill -9.
  for (int i = 0; i < 1200 && ResultLines(journal) < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int before_kill = ResultLines(journal);
  ASSERT_GE(before_kill, 4) << "the tune did not get going";
  ::kill((*child)->pid(), SIGKILL);
  (*child)->Terminate();
  const int at_restart = ResultLines(journal);

  auto r = RunCommand(Tune(journal), 900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  // Everything the journal held was taken from it, not measured again ...
  EXPECT_EQ(j["resumed"].get<int>(), at_restart);
  // ... and the journal grew by exactly what this run measured.
  EXPECT_EQ(ResultLines(journal), at_restart + j["measured"].get<int>());
  EXPECT_GT(j["measured"].get<int>(), 0);
  // A third run measures nothing at all.
  auto again = RunCommand(Tune(journal), 600);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const json k = json::parse(again.out);
  EXPECT_EQ(k["measured"].get<int>(), 0);
  EXPECT_EQ(k["pick"], j["pick"]);

  // The pick against llama.cpp's defaults, measured in the same run. The two
  // share this noisy machine; a tie within 15% is accepted as "at least as good".
  ASSERT_TRUE(j["versus_defaults"].is_object());
  const auto& v = j["versus_defaults"];
  ASSERT_TRUE(v["speedup_depth0"].is_number()) << v.dump();
  EXPECT_GE(v["speedup_depth0"].get<double>(), 0.85) << v.dump();
  EXPECT_FALSE(j["budget_exhausted"].get<bool>());
  EXPECT_LE(j["seconds"].get<double>(), 10 * 60 + 120);
  // No GPU in this engine: placement was not measured, and the output says so.
  EXPECT_FALSE(j["placement_tuned"].get<bool>());
  ASSERT_TRUE(j["command"].is_array());
  EXPECT_EQ(j["command"][0], "llama-server");
  // Processes: nothing left behind by the killed run.
  EXPECT_TRUE(LiveProcessesInGroup((*child)->pgid()).empty());
}

TEST_F(TuneCli, JournalOfAnotherModelIsRefused) {
  const std::string journal = dir_.File("other.journal");
  std::ofstream(journal)
      << R"({"moetune_journal":1,"model":"something else","engine":"x","machine":"y"})"
      << "\n";
  auto r = RunCommand(Tune(journal), 120);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("another model"), std::string::npos) << r.err;
}

TEST_F(TuneCli, BadValuesAreACommandLineError) {
  for (const auto& extra : std::vector<std::vector<std::string>>{{"--ctx", "0"},
                                                                 {"--ctx", "12XiB"},
                                                                 {"--budget", "-3"},
                                                                 {"--budget", "1e10"},
                                                                 {"--workload", "lots"},
                                                                 {"--threads", "0"},
                                                                 {"--threads", "1-100000"},
                                                                 {"-r", "0"},
                                                                 {"--vram", "12XiB"}}) {
    std::vector<std::string> argv = {MoetuneBinary(), "tune", model_, "--no-journal"};
    if (extra[0] != "--ctx") argv.insert(argv.end(), {"--ctx", "1024"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << " " << extra[1] << ": " << r.err;
    EXPECT_NE(r.err.find(extra[0]), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace moetune::itest
