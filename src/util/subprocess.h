#pragma once
/// Child processes, run safely: argument vectors (never a shell string), a new
/// process group per child so that the whole group (the llama.cpp wrapper
/// scripts exec a private loader, and a tool may start helpers) can be killed
/// at once, pipes read with poll(), a timeout that sends SIGTERM and then
/// SIGKILL to the group, and the registry of live groups (child_cleanup.h)
/// so that no child outlives moetune, whatever signal ends it.
///
/// Every ChildProcess is RAII: its destructor kills and reaps the group, so no
/// exit path (error return, exception, test failure) leaves an orphan.
///
/// Output of a child is untrusted: a line longer than kMaxLineBytes is cut
/// (the rest of it is dropped, and a marker says how much), and captured text
/// is bounded, so a child that prints without end cannot exhaust memory.

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

#include "util/child_cleanup.h"
#include "util/result.h"

namespace moetune {

/// Longest line handed to a line callback; the rest of a longer line is
/// replaced by " [... N more bytes cut by moetune]".
inline constexpr std::size_t kMaxLineBytes = std::size_t{64} * 1024;

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
  // A line being assembled from reads; bytes past kMaxLineBytes are counted,
  // not kept.
  struct LineBuffer {
    std::string partial;
    std::size_t dropped = 0;
  };
  // Reaps the leader after sweeping its group (the zombie keeps the pid
  // reserved until then, so the sweep cannot hit an unrelated process) and
  // after unregistering it (so no signal handler or guardian can signal the
  // group id once the kernel may reuse it).
  std::optional<ExitStatus> TryReap(bool block);
  void DrainFd(int& fd, LineBuffer& buffer, const LineCallback& callback, bool at_eof);

  pid_t pid_;
  int out_fd_;
  int err_fd_;
  LineBuffer out_;
  LineBuffer err_;
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
  /// Keep the stdout text (true; at most max_stdout_bytes, then
  /// RunOutput::stdout_truncated) and this many last stderr lines.
  bool capture_stdout = true;
  std::size_t max_stdout_bytes = std::size_t{16} << 20;
  std::size_t stderr_tail_lines = 200;
};

/// The last lines of a child's log, for error messages: lines `skip` says are
/// noise are dropped, the first `max_kept` lines `keep` says matter are kept
/// beyond the tail (an error early in a long log). The one tail collector
/// used for every child (RunProcess, the engine's runs, server logs).
class LogTail {
 public:
  using Predicate = std::function<bool(std::string_view)>;
  explicit LogTail(std::size_t tail_lines, Predicate skip = {}, Predicate keep = {},
                   std::size_t max_kept = 100);
  void Add(std::string_view line);
  const std::deque<std::string>& tail() const { return tail_; }
  const std::vector<std::string>& kept() const { return kept_; }

 private:
  std::size_t tail_lines_;
  Predicate skip_;
  Predicate keep_;
  std::size_t max_kept_;
  std::deque<std::string> tail_;
  std::vector<std::string> kept_;
};

/// What a finished child produced.
struct RunOutput {
  ExitStatus status;
  bool timed_out = false;
  /// moetune itself received SIGINT/SIGTERM while the child ran.
  bool interrupted = false;
  std::string stdout_text;
  bool stdout_truncated = false;  // more than RunOptions::max_stdout_bytes
  std::deque<std::string> stderr_tail;
  double wall_seconds = 0;
};

/// Runs a child to completion (or timeout). The Result is an error only when
/// the child could not be started; how it ended is data in RunOutput.
Result<RunOutput> RunProcess(const RunOptions& options);

/// Processes (not zombies) whose process group is `pgid`, from /proc. Tests use
/// it to prove that nothing a run started is left behind.
std::vector<pid_t> LiveProcessesInGroup(pid_t pgid);

/// Live (non-zombie) descendants of `pid` (children, grandchildren...), from
/// /proc; this process's cleanup guardian (child_cleanup.h) is not counted.
std::vector<pid_t> LiveDescendantsOf(pid_t pid);

}  // namespace moetune
