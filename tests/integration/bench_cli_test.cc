// Integration: `moetune bench` end to end (real llama-bench), its JSON and
// Markdown output, failures as exit codes, flag spellings and limits (signals
// to moetune are tested in signal_test.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
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
    std::string error;
    model_ = SynthModel(dir_->File("bench model.gguf"), "qwen3moe", "tiny", &error);
    ASSERT_FALSE(model_.empty()) << error;
  }
  static void TearDownTestSuite() { delete dir_; }
  void TearDown() override { EXPECT_TRUE(LeftoverDescendants().empty()); }
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

// A quiet machine, or a warning: with another process keeping a core busy,
// bench warns before the first run, marks each result with the load it ran
// under (other_cpu_cores in the JSON) and counts the busy ones after.
TEST_F(BenchCliTest, ABusyMachineIsWarnedAboutAndItsResultsMarked) {
  const pid_t spinner = fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    volatile unsigned long x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
    _exit(0);
  }
  const auto r = RunCommand(Bench({"-t", "1", "-p", "16", "-n", "4", "-r", "2", "--json"}), 600);
  kill(spinner, SIGKILL);
  waitpid(spinner, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("WARNING: the machine is busy: other processes used"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("measurement(s) ran while other processes were busy"), std::string::npos)
      << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);
  for (const auto& res : j["results"]) {
    ASSERT_TRUE(res.contains("other_cpu_cores")) << res.dump();
    EXPECT_GT(res["other_cpu_cores"].get<double>(), 0.25) << res.dump();
  }
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

TEST_F(BenchCliTest, FlashAttnSpellingsAreOneSetting) {
  // `--fa 1` ran and then discarded its result as "unparseable".
  const auto r = RunCommand(Bench({"-t", "1", "-p", "0", "-n", "2", "-r", "1", "--fa", "1,on",
                                   "--json", "--no-progress"}),
                            300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["failures"], 0);
  // One setting, measured once: "-fa on", one configuration in the process.
  const auto argv = j["invocations"][0]["argv"].get<std::vector<std::string>>();
  const auto fa = std::find(argv.begin(), argv.end(), "-fa");
  ASSERT_NE(fa, argv.end());
  EXPECT_EQ(*(fa + 1), "on");
  EXPECT_EQ(j["invocations"][0]["configs"].size(), 1u);
  for (const auto& res : j["results"]) EXPECT_TRUE(res["ok"].get<bool>()) << res.dump(2);

  const auto bad = RunCommand(Bench({"--fa", "ON", "--dry-run"}), 60);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("'ON'"), std::string::npos) << bad.err;
}

TEST_F(BenchCliTest, OverrideWithCommasPassesIntact) {
  const auto r = RunCommand(Bench({"-t", "1", "-p", "0", "-n", "2", "-r", "1", "--ot",
                                   "blk\\.[0-9]{1,2}\\.ffn_up_exps=CPU,blk\\.0\\.ffn_down_exps=CPU",
                                   "--json", "--no-progress"}),
                            300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_TRUE(j["results"][0]["ok"].get<bool>()) << j["results"][0].dump(2);
}

TEST_F(BenchCliTest, HugeSweepsAreRefusedBeforeExpansion) {
  // -t 1-10000 --ub 1-10000 exhausted memory building 10^8 configurations (now
  // -t 10000 is out of range on its own; two lists of 10000 values are not).
  const auto r = RunCommand(Bench({"-b", "1-10000", "--ub", "1-10000", "--dry-run"}), 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("200000000 configurations"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("at most 10000"), std::string::npos) << r.err;
  // 10,000 configurations plan (one process) and print at once.
  const auto ok = RunCommand(Bench({"-t", "1-100", "--ub", "1-100", "-n", "0", "--dry-run"}), 60);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(std::count(ok.out.begin(), ok.out.end(), '\n'), 1);
}

TEST_F(BenchCliTest, EngineOutputThatIsNotUtf8IsNoCrash) {
  // An engine printing a byte like \xff (and a terminal escape) aborted
  // `moetune engine` even in text mode, and left an empty temporary file in
  // the probe cache.
  const std::filesystem::path engine = dir_->path() / "odd-engine";
  std::filesystem::create_directories(engine);
  std::ofstream(engine / "llama-bench")
      << "#!/bin/sh\ncase \"$1\" in\n  --version) printf 'version: 7 (\\377\\033[2J)\\n' ;;\n"
      << "  --help) echo '  -ngl, --n-gpu-layers <n>' ;;\n  *) echo 'Available devices:' ;;\n"
      << "esac\n";
  std::filesystem::permissions(engine / "llama-bench", std::filesystem::perms::owner_all);
  const std::string cache = dir_->File("cache");
  const std::vector<std::pair<std::string, std::string>> env = {{"XDG_CACHE_HOME", cache}};
  const auto text =
      RunCommand({MoetuneBinary(), "engine", "--llama-dir", engine.string()}, 60, env);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  const auto json =
      RunCommand({MoetuneBinary(), "engine", "--json", "--llama-dir", engine.string()}, 60, env);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << json.out;
  EXPECT_EQ(j["build_number"], 7);
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(!e.is_regular_file() || (name.starts_with("engine-") && name.ends_with(".json")))
        << name;
  }
}

}  // namespace
}  // namespace moetune::itest
