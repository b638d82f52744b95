// Integration: `moetune bench` end to end (real llama-bench), its JSON and
// Markdown output, failures as exit codes, and SIGINT leaving no engine behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

class BenchCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->File("bench model.gguf");
    const auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() { delete dir_; }
  void TearDown() override {
    for (int i = 0; i < 100 && !LiveDescendantsOf(::getpid()).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(LiveDescendantsOf(::getpid()).empty());
  }
  static std::vector<std::string> Bench(std::vector<std::string> extra) {
    std::vector<std::string> argv = {MoetuneBinary(), "bench", model_};
    if (auto d = EngineDir()) argv.insert(argv.end(), {"--llama-dir", d->string()});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  static TempDir* dir_;
  static std::string model_;
};

TempDir* BenchCliTest::dir_ = nullptr;
std::string BenchCliTest::model_;

TEST_F(BenchCliTest, JsonSweepLoadsOnce) {
  const auto r = RunCommand(Bench({"-t", "1,2", "-p", "16", "-n", "4", "-r", "2", "--json"}), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);
  EXPECT_EQ(j["model_loads"], 1);
  EXPECT_EQ(j["invocations"].size(), 1u);
  EXPECT_EQ(j["failures"], 0);
  for (const auto& res : j["results"]) {
    EXPECT_TRUE(res["ok"].get<bool>());
    EXPECT_EQ(res["samples_ts"].size(), 2u);
    EXPECT_GT(res["tokens_per_second"]["median"].get<double>(), 0);
    EXPECT_FALSE(res["tokens_per_second"]["sd"].is_null());
  }
  EXPECT_EQ(j["results"][3]["test"], "tg4");
  EXPECT_EQ(j["results"][3]["threads"], 2);
}

TEST_F(BenchCliTest, MarkdownTable) {
  const auto r =
      RunCommand(Bench({"-t", "1", "-p", "16", "-n", "0", "-r", "1", "--ncmoe", "0,2"}), 600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| test"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pp16"), std::string::npos);
  EXPECT_NE(r.out.find("2 engine process(es), 2 model load(s)"), std::string::npos) << r.out;
}

TEST_F(BenchCliTest, FailuresAreReportedWithKindAndExitCode) {
  const std::string bad = dir_->File("bad.gguf");
  std::ofstream(bad) << "GGUF but not really";
  std::vector<std::string> argv = {MoetuneBinary(), "bench", bad, "-p", "16", "-n", "0", "-r", "1",
                                   "--json"};
  if (auto d = EngineDir()) argv.insert(argv.end(), {"--llama-dir", d->string()});
  const auto r = RunCommand(argv, 300);
  EXPECT_EQ(r.exit_code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["results"][0]["failure"]["kind"], "model_load");
  EXPECT_FALSE(j["results"][0]["failure"]["message"].get<std::string>().empty());

  const auto bad_flag = RunCommand(Bench({"-t", "x"}), 60);
  EXPECT_NE(bad_flag.exit_code, 0);
  EXPECT_NE(bad_flag.err.find("'x'"), std::string::npos) << bad_flag.err;

  const auto no_engine =
      RunCommand({MoetuneBinary(), "bench", model_, "--llama-dir", dir_->File("nowhere")}, 60);
  EXPECT_EQ(no_engine.exit_code, 1);
  EXPECT_NE(no_engine.err.find("nowhere"), std::string::npos) << no_engine.err;
}

TEST_F(BenchCliTest, SigintLeavesNoEngineBehind) {
  SpawnOptions s;
  s.argv = Bench({"-t", "1", "-p", "0", "-n", "500000", "-r", "5", "--no-progress"});
  s.stdout_mode = OutputMode::kDiscard;
  s.stderr_mode = OutputMode::kDiscard;
  auto child = ChildProcess::Spawn(s);
  ASSERT_TRUE(child.ok()) << child.error().message();
  // Wait for moetune's own engine child (a grandchild of this test).
  std::vector<pid_t> engine;
  for (int i = 0; i < 600 && engine.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    engine = LiveDescendantsOf((*child)->pid());
  }
  ASSERT_FALSE(engine.empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill((*child)->pid(), SIGINT);  // moetune only, as a terminal's Ctrl-C would reach it
  std::optional<ExitStatus> st;
  for (int i = 0; i < 400 && !st; ++i) {
    st = (*child)->Poll();
    if (!st) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(st.has_value()) << "moetune did not exit on SIGINT";
  EXPECT_EQ(st->signal, SIGINT) << st->Describe();
  for (pid_t p : engine) {
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = ::kill(p, 0) != 0;
      std::ifstream stat("/proc/" + std::to_string(p) + "/stat");
      std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
      const auto close = text.rfind(')');
      gone = gone || text.empty() || (close != std::string::npos && text[close + 2] == 'Z');
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    EXPECT_TRUE(gone) << "engine process " << p << " survived moetune's SIGINT";
  }
}

}  // namespace
}  // namespace moetune::itest
