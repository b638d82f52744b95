// Integration: whatever signal ends moetune, nothing the engine started
// survives it. The real moetune runs `bench` against an engine folder whose
// llama-bench is a wrapper script: it forks a grandchild that ignores the
// usual termination signals and gets no parent-death signal, then execs the
// real llama-bench. Each catchable signal is sent to moetune with only the
// signal handler enabled (MOETUNE_CHILD_CLEANUP=handler), SIGKILL with only
// the guardian; the controls show that the same grandchild survives when the
// mechanism under test is off, so each test fails for the reason it names.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;

class SignalCleanupTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    // SIGQUIT, SIGSEGV, ... dump core by default: not in the test folder.
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    dir_ = new TempDir();
    std::string error;
    model_ = SynthModel(dir_->File("m.gguf"), "qwen3moe", "tiny", &error);
    ASSERT_FALSE(model_.empty()) << error;
    const auto engine = EngineDir();
    ASSERT_TRUE(engine.has_value()) << "no llama.cpp engine (scripts/setup-engine.sh)";
    real_bench_ = (*engine / "llama-bench").string();
  }
  static void TearDownTestSuite() { delete dir_; }

  struct Outcome {
    std::optional<ExitStatus> moetune;  // how moetune ended
    pid_t grandchild = 0;
    bool grandchild_gone = false;
  };

  // Starts `moetune bench` on the wrapper engine, waits until the engine has
  // forked its grandchild, sends `sig` to moetune only, and reports.
  // `expect_survivor`: a control, where waiting a second for a death that
  // must not come is enough.
  static Outcome Run(int sig, const std::string& mechanisms, const std::string& name,
                     bool expect_survivor = false) {
    Outcome o;
    const fs::path engine = dir_->path() / ("engine-" + name);
    fs::create_directories(engine);
    const std::string pid_file = (engine / "grandchild.pid").string();
    {
      std::ofstream w(engine / "llama-bench");
      w << "#!/bin/sh\n"
           "case \" $* \" in *\" -m \"*)\n"
           "  sh -c 'trap \"\" HUP INT QUIT TERM USR1 USR2 ALRM PIPE; exec sleep 300' &\n"
           "  echo $! > '"
        << pid_file << ".tmp' && mv '" << pid_file << ".tmp' '" << pid_file
        << "' ;;\n"
           "esac\n"
           "exec '"
        << real_bench_ << "' \"$@\"\n";
    }
    fs::permissions(engine / "llama-bench", fs::perms::owner_all);
    SpawnOptions s;
    s.argv = {MoetuneBinary(),
              "bench",
              model_,
              "--llama-dir",
              engine.string(),
              "-t",
              "1",
              "-p",
              "0",
              "-n",
              "1000000",
              "-r",
              "1",
              "--no-progress"};
    s.env_set = {{"MOETUNE_CHILD_CLEANUP", mechanisms}};
    s.stdout_mode = OutputMode::kDiscard;
    s.stderr_mode = OutputMode::kDiscard;
    auto child = ChildProcess::Spawn(s);
    EXPECT_TRUE(child.ok()) << child.error().message();
    if (!child.ok()) return o;
    for (int i = 0; i < 1200 && o.grandchild <= 0; ++i) {
      std::ifstream(pid_file) >> o.grandchild;
      if (o.grandchild <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    EXPECT_GT(o.grandchild, 0) << "the wrapper engine never started";
    if (o.grandchild <= 0) return o;
    ::kill((*child)->pid(), sig);
    for (int i = 0; i < 1200 && !o.moetune; ++i) {
      o.moetune = (*child)->Poll();
      if (!o.moetune) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    o.grandchild_gone = ProcessGone(o.grandchild, expect_survivor ? 1.0 : 5.0);
    if (!o.grandchild_gone) ::kill(o.grandchild, SIGKILL);  // the test's own cleanup
    return o;
  }

  static TempDir* dir_;
  static std::string model_;
  static std::string real_bench_;
};

TempDir* SignalCleanupTest::dir_ = nullptr;
std::string SignalCleanupTest::model_;
std::string SignalCleanupTest::real_bench_;

TEST_P(SignalCleanupTest, HandlerLeavesNoGrandchild) {
  const int sig = GetParam();
  const Outcome o = Run(sig, "handler", SignalName(sig));
  ASSERT_TRUE(o.moetune.has_value()) << "moetune did not end on " << SignalName(sig);
  // Re-raised with the default action: the exit status names the signal.
  EXPECT_FALSE(o.moetune->exited) << o.moetune->Describe();
  EXPECT_EQ(o.moetune->signal, sig) << o.moetune->Describe();
  EXPECT_TRUE(o.grandchild_gone) << "the engine's grandchild survived " << SignalName(sig);
}

// Every classic signal whose default action ends the process, derived here
// independently of the library's list: all of 1..31 except SIGKILL and
// SIGSTOP (not catchable) and the ones whose default is to ignore, stop or
// continue (signal(7)); plus the first and last real-time signals.
std::vector<int> CatchableSignals() {
  std::vector<int> s;
  for (int sig = 1; sig < 32; ++sig) {
    switch (sig) {
      case SIGKILL:
      case SIGSTOP:
      case SIGCHLD:
      case SIGCONT:
      case SIGTSTP:
      case SIGTTIN:
      case SIGTTOU:
      case SIGURG:
      case SIGWINCH:
        continue;
      default:
        s.push_back(sig);
    }
  }
  s.push_back(SIGRTMIN);
  s.push_back(SIGRTMAX);
  return s;
}

INSTANTIATE_TEST_SUITE_P(EveryTerminatingSignal, SignalCleanupTest,
                         ::testing::ValuesIn(CatchableSignals()),
                         [](const ::testing::TestParamInfo<int>& p) {
                           std::string n = SignalName(p.param);
                           for (char& c : n)
                             c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST_F(SignalCleanupTest, GuardianCleansUpAfterSigkill) {
  const Outcome o = Run(SIGKILL, "guardian", "sigkill-guardian");
  ASSERT_TRUE(o.moetune.has_value());
  EXPECT_EQ(o.moetune->signal, SIGKILL);
  EXPECT_TRUE(o.grandchild_gone) << "the engine's grandchild survived SIGKILL of moetune";
}

TEST_F(SignalCleanupTest, DefaultSettingsCleanUpAfterSigtermAndSigkill) {
  for (int sig : {SIGTERM, SIGKILL}) {
    const Outcome o = Run(sig, "all", "all-" + SignalName(sig));
    ASSERT_TRUE(o.moetune.has_value());
    EXPECT_EQ(o.moetune->signal, sig);
    EXPECT_TRUE(o.grandchild_gone) << SignalName(sig);
  }
}

// The controls: the same setup with the mechanism under test switched off
// leaves the grandchild alive (the parent-death signal alone does not reach it).
TEST_F(SignalCleanupTest, WithoutTheHandlerAGrandchildSurvives) {
  const Outcome o = Run(SIGTERM, "none", "control-sigterm", /*expect_survivor=*/true);
  ASSERT_TRUE(o.moetune.has_value());
  EXPECT_FALSE(o.grandchild_gone) << "nothing cleaned up, yet the grandchild died: the wrapper "
                                     "engine does not test what it should";
}

TEST_F(SignalCleanupTest, WithoutTheGuardianSigkillLeavesAGrandchild) {
  const Outcome o = Run(SIGKILL, "handler", "control-sigkill", /*expect_survivor=*/true);
  ASSERT_TRUE(o.moetune.has_value());
  EXPECT_FALSE(o.grandchild_gone);
}

}  // namespace
}  // namespace moetune::itest
