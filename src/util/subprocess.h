#pragma once
/// Child processes, run safely: argument vectors (never a shell string), a new
/// process group per child so that the whole group (the llama.cpp wrapper
/// scripts exec a private loader, and a tool may start helpers) can be killed
/// at once, pipes read with poll(), a timeout that sends SIGTERM and then
/// SIGKILL to the group, and a process-wide registry of live groups so that a
/// SIGINT/SIGTERM to moetune kills every child before moetune exits.
///
/// Every ChildProcess is RAII: its destructor kills and reaps the group, so no
/// exit path (error return, exception, test failure) leaves an orphan.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace moetune {

/// Where a child's stdout or stderr goes.
enum class OutputMode {
  kPipe,     // read by the parent (line callbacks, captured text)
  kFile,     // appended to a file (long-running servers whose logs nobody drains)
  kDiscard,  // /dev/null
};

/// How to start a child.
struct SpawnOptions {
  /// argv[0] is the program: a path, or a bare name looked up in PATH.
  std::vector<std::string> argv;
  /// Extra environment (added to or replacing moetune's own).
  std::vector<std::pair<std::string, std::string>> env_set;
  /// Variables removed from the child's environment.
  std::vector<std::string> env_unset;
  /// Working directory; empty = moetune's.
  std::string cwd;
  OutputMode stdout_mode = OutputMode::kPipe;
  OutputMode stderr_mode = OutputMode::kPipe;
  std::string stdout_file;  // for OutputMode::kFile
  std::string stderr_file;  // for OutputMode::kFile
};

/// How a child ended.
struct ExitStatus {
  bool exited = false;  // normal exit: see exit_code
  int exit_code = -1;
  int signal = 0;  // killed by this signal (when !exited)
  bool core_dumped = false;

  bool success() const { return exited && exit_code == 0; }
  /// "exit code 1", "signal 9 (SIGKILL)", "signal 6 (SIGABRT, core dumped)".
  std::string Describe() const;
};

/// "SIGKILL" for 9, "signal 42" for unknown numbers.
std::string SignalName(int signal);

/// Resolves a program name the way execvp would (PATH search when the name has
/// no '/'); errors say whether it is missing or not executable.
Result<std::string> ResolveProgram(const std::string& program);

/// One running child in its own process group. Not copyable; destroying it
/// kills and reaps the group.
class ChildProcess {
 public:
  /// Starts the child. Errors (kNotFound / kIo) name the program and the fix.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const SpawnOptions& options);

  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  /// The child's process group id (equal to its pid).
  pid_t pgid() const { return pid_; }

  /// Reads stdout/stderr (when piped) line by line, calling the callbacks,
  /// until the child exits or `deadline` passes. Returns the exit status, or
  /// nullopt on deadline (the child is then still running).
  using LineCallback = std::function<void(std::string_view line)>;
  std::optional<ExitStatus> Pump(std::chrono::steady_clock::time_point deadline,
                                 const LineCallback& on_stdout, const LineCallback& on_stderr);

  /// Non-blocking: the exit status if the child has exited (and is reaped now).
  std::optional<ExitStatus> Poll();

  /// SIGTERM to the group, up to `grace` for it to exit, then SIGKILL; reaps the
  /// child and returns how it ended. Idempotent.
  ExitStatus Terminate(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  bool running() const { return !status_.has_value(); }

 private:
  ChildProcess(pid_t pid, int out_fd, int err_fd);
  // Reaps the leader after sweeping its group (the zombie keeps the pid
  // reserved until then, so the sweep cannot hit an unrelated process).
  std::optional<ExitStatus> TryReap(bool block);
  void DrainFd(int& fd, std::string& partial, const LineCallback& callback, bool at_eof);

  pid_t pid_;
  int out_fd_;
  int err_fd_;
  std::string out_partial_;
  std::string err_partial_;
  std::optional<ExitStatus> status_;
};

/// Options for running a child to completion.
struct RunOptions {
  SpawnOptions spawn;
  /// Wall-clock limit; nullopt = none. On expiry the group gets SIGTERM, then
  /// SIGKILL after `kill_grace`.
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds kill_grace{2000};
  /// Called for each complete line (without the newline), in order.
  ChildProcess::LineCallback on_stdout_line;
  ChildProcess::LineCallback on_stderr_line;
  /// Keep the whole stdout text (true) and this many last stderr lines.
  bool capture_stdout = true;
  std::size_t stderr_tail_lines = 200;
};

/// What a finished child produced.
struct RunOutput {
  ExitStatus status;
  bool timed_out = false;
  /// moetune itself received SIGINT/SIGTERM while the child ran.
  bool interrupted = false;
  std::string stdout_text;
  std::deque<std::string> stderr_tail;
  double wall_seconds = 0;
};

/// Runs a child to completion (or timeout). The Result is an error only when
/// the child could not be started; how it ended is data in RunOutput.
Result<RunOutput> RunProcess(const RunOptions& options);

/// Installs SIGINT/SIGTERM/SIGHUP handlers that kill every live child group
/// (SIGTERM, a short grace, SIGKILL) and then let the signal end moetune.
/// Called once by main(); safe to call more than once.
void InstallChildCleanupOnSignals();

/// True once moetune received SIGINT/SIGTERM/SIGHUP (set by the handler).
bool TerminationRequested();

/// Number of child groups currently registered as live (for tests).
int LiveChildGroupCount();

/// Sends `signal` to every registered child group (async-signal-safe).
void SignalAllChildGroups(int signal);

/// Processes (not zombies) whose process group is `pgid`, from /proc. Tests use
/// it to prove that nothing a run started is left behind.
std::vector<pid_t> LiveProcessesInGroup(pid_t pgid);

/// Live (non-zombie) descendants of `pid` (children, grandchildren...), from /proc.
std::vector<pid_t> LiveDescendantsOf(pid_t pid);

}  // namespace moetune
