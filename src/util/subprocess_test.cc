#include "util/subprocess.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace moetune {
namespace {

using std::chrono::milliseconds;

// Waits briefly for the kernel to finish tearing processes down, then lists
// what is left of the group.
std::vector<pid_t> LeftInGroup(pid_t pgid) {
  for (int i = 0; i < 100; ++i) {
    auto left = LiveProcessesInGroup(pgid);
    if (left.empty()) return left;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return LiveProcessesInGroup(pgid);
}

// Processes that end while /proc is scanned: one that is listed and gone by
// the time its stat is read answers the read with ESRCH. The scan skips it;
// it threw from a stream's iterator ("basic_filebuf::underflow error reading
// the file: No such process"), seen in a unit test under load.
TEST(SubprocessTest, ScanningProcWhileProcessesEndDoesNotThrow) {
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop) {
      const pid_t p = ::fork();
      if (p == 0) ::_exit(0);
      if (p > 0) ::waitpid(p, nullptr, 0);
    }
  });
  std::string thrown;
  for (int i = 0; i < 2000 && thrown.empty(); ++i) {
    try {
      LiveDescendantsOf(::getpid());
    } catch (const std::exception& e) {
      thrown = fmt::format("scan {}: {}", i, e.what());
    }
  }
  stop = true;
  churn.join();
  EXPECT_EQ(thrown, "");
}

TEST(SubprocessTest, ArgumentsWithSpacesAndQuotesArriveVerbatim) {
  RunOptions o;
  o.spawn.argv = {"printf", "%s|%s|%s\n", "a b", "it's \"quoted\"", "$HOME;`x`"};
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->status.success());
  EXPECT_EQ(r->stdout_text, "a b|it's \"quoted\"|$HOME;`x`\n");
  EXPECT_EQ(LiveChildGroupCount(), 0);
}

TEST(SubprocessTest, ExitCodeStderrTailAndLineCallbacks) {
  RunOptions o;
  o.spawn.argv = {"sh", "-c", "echo out1; echo err1 >&2; echo err2 >&2; printf tail >&2; exit 3"};
  o.stderr_tail_lines = 2;
  std::vector<std::string> err_lines;
  o.on_stderr_line = [&](std::string_view l) { err_lines.emplace_back(l); };
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->status.exited);
  EXPECT_EQ(r->status.exit_code, 3);
  EXPECT_EQ(r->stdout_text, "out1\n");
  EXPECT_EQ(err_lines, (std::vector<std::string>{"err1", "err2", "tail"}));
  ASSERT_EQ(r->stderr_tail.size(), 2u);
  EXPECT_EQ(r->stderr_tail.back(), "tail");
  EXPECT_EQ(r->status.Describe(), "exit code 3");
}

TEST(SubprocessTest, MissingProgramIsNotFound) {
  RunOptions o;
  o.spawn.argv = {"/nonexistent/llama-bench", "--version"};
  auto r = RunProcess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(r.error().message().find("/nonexistent/llama-bench"), std::string::npos);

  o.spawn.argv = {"moetune-no-such-program-xyz"};
  r = RunProcess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not found in PATH"), std::string::npos);
}

TEST(SubprocessTest, NonExecutableFileIsRejected) {
  const std::string path = ::testing::TempDir() + "/moetune_not_exec.sh";
  { std::ofstream(path) << "#!/bin/sh\necho hi\n"; }
  ::chmod(path.c_str(), 0644);
  RunOptions o;
  o.spawn.argv = {path};
  auto r = RunProcess(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not an executable"), std::string::npos);
  std::remove(path.c_str());
}

TEST(SubprocessTest, TimeoutKillsTheWholeGroup) {
  RunOptions o;
  // A shell that ignores SIGTERM and has a background grandchild: only a
  // group-wide SIGKILL gets rid of both.
  o.spawn.argv = {"sh", "-c", "trap '' TERM; sleep 30 & sleep 30; wait"};
  o.timeout = milliseconds(300);
  o.kill_grace = milliseconds(200);
  pid_t pgid = 0;
  o.on_stdout_line = nullptr;
  auto child = ChildProcess::Spawn(o.spawn);
  ASSERT_TRUE(child.ok());
  pgid = (*child)->pgid();
  child = Error(ErrorKind::kInternal, "released");  // destroys the child: kills the group
  EXPECT_TRUE(LeftInGroup(pgid).empty());

  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->status.exited);
  EXPECT_EQ(r->status.signal, SIGKILL);
  EXPECT_EQ(LiveChildGroupCount(), 0);
  EXPECT_TRUE(LiveDescendantsOf(::getpid()).empty());
}

TEST(SubprocessTest, GrandchildHoldingThePipeDoesNotHangTheRun) {
  RunOptions o;
  o.spawn.argv = {"sh", "-c", "sleep 30 & echo started"};
  o.timeout = milliseconds(20000);  // a run that waited for the grandchild would time out
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->status.success());
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->stdout_text, "started\n");
  EXPECT_TRUE(LiveDescendantsOf(::getpid()).empty());
}

TEST(SubprocessTest, SignalDeathIsReported) {
  RunOptions o;
  o.spawn.argv = {"sh", "-c", "kill -SEGV $$"};
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->status.exited);
  EXPECT_EQ(r->status.signal, SIGSEGV);
  EXPECT_NE(r->status.Describe().find("SIGSEGV"), std::string::npos);
}

TEST(SubprocessTest, EnvironmentSetAndUnset) {
  ::setenv("MOETUNE_TEST_DROP", "1", 1);
  RunOptions o;
  o.spawn.argv = {"sh", "-c", "echo \"${MOETUNE_TEST_SET}-${MOETUNE_TEST_DROP:-unset}\""};
  o.spawn.env_set = {{"MOETUNE_TEST_SET", "x y"}};
  o.spawn.env_unset = {"MOETUNE_TEST_DROP"};
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "x y-unset\n");
  ::unsetenv("MOETUNE_TEST_DROP");
}

TEST(SubprocessTest, OutputToFileAndWorkingDirectory) {
  const std::string dir = ::testing::TempDir();
  const std::string log = dir + "/moetune_subprocess_log.txt";
  std::remove(log.c_str());
  RunOptions o;
  o.spawn.argv = {"sh", "-c", "pwd; echo to-err >&2"};
  o.spawn.cwd = "/";
  o.spawn.stderr_mode = OutputMode::kFile;
  o.spawn.stderr_file = log;
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "/\n");
  std::ifstream f(log);
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "to-err");
  std::remove(log.c_str());

  o.spawn.stderr_file = "/nonexistent-dir/x.log";
  auto bad = RunProcess(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("/nonexistent-dir/x.log"), std::string::npos);
}

TEST(SubprocessTest, LargeOutputIsReadCompletely) {
  RunOptions o;
  o.spawn.argv = {"sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done"};
  std::size_t lines = 0;
  o.on_stdout_line = [&](std::string_view) { ++lines; };
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(lines, 20000u);
}

TEST(SubprocessTest, LongLinesAreCutAndCaptureIsBounded) {
  RunOptions o;
  // One 3 MB line, then a short one.
  o.spawn.argv = {"sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo short"};
  std::vector<std::size_t> sizes;
  std::string last;
  o.on_stdout_line = [&](std::string_view l) { sizes.push_back(l.size()); };
  o.max_stdout_bytes = 50000;  // less than the cut first line
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_LT(sizes[0], kMaxLineBytes + 100);
  EXPECT_EQ(sizes[1], 5u);
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_TRUE(r->stdout_text.empty());  // nothing after the bound is kept either
  // The marker says how much was cut.
  o.on_stdout_line = [&](std::string_view l) {
    if (l.size() > kMaxLineBytes) last = std::string(l.substr(kMaxLineBytes));
  };
  r = RunProcess(o);
  EXPECT_EQ(last, fmt::format(" [... {} more bytes cut by moetune]", 3000000 - kMaxLineBytes));
}

TEST(SubprocessTest, LogTailKeepsTheEndAndWhatMatters) {
  LogTail tail(
      2, [](std::string_view l) { return l == "noise"; },
      [](std::string_view l) { return l.starts_with("error"); }, 1);
  for (const char* l : {"error: first", "noise", "a", "error: second", "b", "c"}) tail.Add(l);
  EXPECT_EQ(tail.tail(), (std::deque<std::string>{"b", "c"}));
  EXPECT_EQ(tail.kept(), (std::vector<std::string>{"error: first"}));
}

TEST(SubprocessTest, SignalNamesCoverEverySignal) {
  EXPECT_EQ(SignalName(SIGUSR1), "SIGUSR1");
  EXPECT_EQ(SignalName(SIGXCPU), "SIGXCPU");
  EXPECT_EQ(SignalName(SIGRTMIN + 1), "SIGRTMIN+1");
  EXPECT_EQ(SignalName(0x7fff), "signal 32767");
}

// A SIGTERM to moetune kills every live child group before moetune exits. The
// group holds grandchildren (the shell's background sleeps) that no
// parent-death signal reaches, so only the handler can remove them: the
// control below shows them surviving without it.
std::string RunAndKill(bool install_handler) {
  // One file per test: ctest -j runs the two tests below at once. (Not per
  // process: the threadsafe death test runs the body in a re-executed child.)
  std::string pid_file = fmt::format("{}/moetune_signal_child_{}.pid", ::testing::TempDir(),
                                     install_handler ? "handler" : "none");
  std::remove(pid_file.c_str());
  auto body = [&pid_file, install_handler] {
    // Only the handler: the guardian would clean up too and hide a failure.
    ::setenv("MOETUNE_CHILD_CLEANUP", install_handler ? "handler" : "none", 1);
    InstallChildCleanupOnSignals();
    SpawnOptions s;
    s.argv = {"sh", "-c", "trap '' TERM; sleep 60 & sleep 60; wait"};
    auto c = ChildProcess::Spawn(s);
    if (!c.ok()) std::_Exit(3);
    { std::ofstream(pid_file) << (*c)->pgid() << "\n"; }
    // The shell and both sleeps must exist before the signal, or there is
    // nothing for the handler (or its absence) to show.
    // A loaded machine can take seconds to start them; without them the
    // test proves nothing, so it fails with its own exit code.
    bool ready = false;
    for (int i = 0; i < 3000 && !ready; ++i) {
      ready = LiveProcessesInGroup((*c)->pgid()).size() >= 3;
      if (!ready) std::this_thread::sleep_for(milliseconds(10));
    }
    if (!ready) std::_Exit(5);
    ::raise(SIGTERM);
    std::_Exit(4);  // not reached: SIGTERM ends the process either way
  };
  EXPECT_EXIT(body(), ::testing::KilledBySignal(SIGTERM), "");
  return pid_file;
}

TEST(SubprocessDeathTest, TerminationSignalKillsChildren) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string pid_file = RunAndKill(true);
  pid_t pgid = 0;
  std::ifstream(pid_file) >> pgid;
  ASSERT_GT(pgid, 0);
  EXPECT_TRUE(LeftInGroup(pgid).empty());
  std::remove(pid_file.c_str());
}

TEST(SubprocessDeathTest, WithoutTheHandlerGrandchildrenSurvive) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string pid_file = RunAndKill(false);
  pid_t pgid = 0;
  std::ifstream(pid_file) >> pgid;
  ASSERT_GT(pgid, 0);
  EXPECT_FALSE(LeftInGroup(pgid).empty()) << "the control lost its grandchildren: the test above "
                                             "would pass without the handler";
  ::kill(-pgid, SIGKILL);
  std::remove(pid_file.c_str());
}

}  // namespace
}  // namespace moetune
