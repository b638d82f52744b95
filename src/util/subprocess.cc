#include "util/subprocess.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>
#include <thread>

#include "util/read_file.h"

extern char** environ;

namespace moetune {
namespace {

void SleepMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

ExitStatus FromWaitStatus(int ws) {
  ExitStatus s;
  if (WIFEXITED(ws)) {
    s.exited = true;
    s.exit_code = WEXITSTATUS(ws);
  } else if (WIFSIGNALED(ws)) {
    s.signal = WTERMSIG(ws);
    s.core_dumped = WCOREDUMP(ws);
  }
  return s;
}

void SetNonBlocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Opens the target of one output stream in the parent, so that errors (a
// missing folder for a log file) are reported before forking.
Result<int> OpenOutput(OutputMode mode, const std::string& file, int pipe_write_end) {
  switch (mode) {
    case OutputMode::kPipe:
      return pipe_write_end;
    case OutputMode::kDiscard: {
      const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (fd < 0) return Error(ErrorKind::kIo, "cannot open /dev/null");
      return fd;
    }
    case OutputMode::kFile: {
      const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd < 0) {
        return Error(ErrorKind::kIo,
                     fmt::format("cannot open log file '{}': {}; check that its folder exists",
                                 file, std::strerror(errno)));
      }
      return fd;
    }
  }
  return Error(ErrorKind::kInternal, "unknown output mode");
}

struct ProcStat {
  pid_t pid = 0;
  char state = '?';
  pid_t ppid = 0;
  pid_t pgrp = 0;
};

std::vector<ProcStat> ScanProc() {
  std::vector<ProcStat> all;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return all;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    // A process that ends between the listing and the read answers the read
    // with ESRCH, which a stream's iterator throws as an exception: read it
    // with errors as values, and skip it (it is gone).
    auto stat = ReadRegularFile(fmt::format("/proc/{}/stat", e->d_name), 4096);
    if (!stat.ok()) continue;
    const std::string& text = *stat;
    // "pid (comm) state ppid pgrp ...": comm may contain spaces and ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 1));
    ProcStat s;
    s.pid = static_cast<pid_t>(pid);
    rest >> s.state >> s.ppid >> s.pgrp;
    if (rest) all.push_back(s);
  }
  ::closedir(dir);
  return all;
}

// The environment of a child: this process's, less `env_unset` and the names
// `env_set` replaces, plus `env_set`.
std::vector<std::string> ChildEnvironment(const SpawnOptions& options) {
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    const std::string_view name = kv.substr(0, kv.find('='));
    bool drop = false;
    for (const auto& u : options.env_unset) drop = drop || name == u;
    for (const auto& [k, v] : options.env_set) drop = drop || name == k;
    if (!drop) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : options.env_set) env_strings.push_back(fmt::format("{}={}", k, v));
  return env_strings;
}

// Closes each descriptor that is open and marks it closed (-1).
void CloseAndForget(std::initializer_list<int*> fds) {
  for (int* fd : fds) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

// Pointers to `strings` and a null, for exec.
std::vector<char*> NullTerminated(std::vector<std::string>* strings) {
  std::vector<char*> out;
  out.reserve(strings->size() + 1);
  for (auto& s : *strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// The errno the child wrote to the exec pipe `fd` when exec failed; 0 when the
// pipe closed on a successful exec (O_CLOEXEC). Closes `fd`.
int ExecErrno(int fd) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(fd, &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof child_errno) ? child_errno : 0;
}

// What the child needs after fork, prepared before it.
struct ChildSetup {
  const char* program;
  char* const* argv;
  char* const* envp;
  const char* cwd;  // null: the parent's
  int null_in, out_fd, err_fd;
  int exec_fd;  // carries errno to the parent when exec fails
  pid_t parent;
};

// The child side of Spawn: its own process group, killed with its parent,
// default signals, its descriptors, then exec. Only async-signal-safe calls.
[[noreturn]] void ExecChild(const ChildSetup& c) {
  ::setpgid(0, 0);
  // If moetune dies without a chance to clean up (SIGKILL), so does the child.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != c.parent) _exit(127);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGCHLD})
    sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (c.null_in >= 0) ::dup2(c.null_in, 0);
  ::dup2(c.out_fd, 1);
  ::dup2(c.err_fd, 2);
  CloseInheritedDescriptors(c.exec_fd);
  if (c.cwd != nullptr && ::chdir(c.cwd) != 0) {
    const int e = errno;
    [[maybe_unused]] ssize_t w = ::write(c.exec_fd, &e, sizeof e);
    _exit(127);
  }
  ::execve(c.program, c.argv, c.envp);
  const int e = errno;
  [[maybe_unused]] ssize_t w = ::write(c.exec_fd, &e, sizeof e);
  _exit(127);
}

}  // namespace

std::vector<pid_t> LiveProcessesInGroup(pid_t pgid) {
  std::vector<pid_t> out;
  for (const auto& s : ScanProc()) {
    if (s.pgrp == pgid && s.state != 'Z' && s.state != 'X') out.push_back(s.pid);
  }
  return out;
}

std::vector<pid_t> LiveDescendantsOf(pid_t pid) {
  const auto all = ScanProc();
  const pid_t guardian = CleanupGuardianPid();
  std::multimap<pid_t, const ProcStat*> children;
  for (const auto& s : all) children.emplace(s.ppid, &s);
  std::vector<pid_t> out;
  std::vector<pid_t> todo{pid};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    auto [lo, hi] = children.equal_range(p);
    for (auto it = lo; it != hi; ++it) {
      if (it->second->pid == guardian && p == ::getpid()) continue;
      if (it->second->state != 'Z' && it->second->state != 'X') out.push_back(it->second->pid);
      todo.push_back(it->second->pid);
    }
  }
  return out;
}

std::string SignalName(int signal) {
  if (signal >= SIGRTMIN && signal <= SIGRTMAX) {
    if (signal == SIGRTMIN) return "SIGRTMIN";
    if (signal == SIGRTMAX) return "SIGRTMAX";
    return fmt::format("SIGRTMIN+{}", signal - SIGRTMIN);
  }
  // glibc's own abbreviations ("USR1"); none for numbers it does not know.
  if (const char* abbrev = ::sigabbrev_np(signal); abbrev != nullptr) {
    return fmt::format("SIG{}", abbrev);
  }
  return fmt::format("signal {}", signal);
}

std::string ExitStatus::Describe() const {
  if (exited) return fmt::format("exit code {}", exit_code);
  if (signal != 0) {
    return fmt::format("signal {} ({}{})", signal, SignalName(signal),
                       core_dumped ? ", core dumped" : "");
  }
  return "still running";
}

Result<std::string> ResolveProgram(const std::string& program) {
  if (program.empty()) return Error(ErrorKind::kInvalidArgument, "empty program name");
  if (program.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(program.c_str(), &st) != 0) {
      return Error(ErrorKind::kNotFound, fmt::format("program '{}' does not exist", program));
    }
    if (!S_ISREG(st.st_mode) || ::access(program.c_str(), X_OK) != 0) {
      return Error(
          ErrorKind::kNotFound,
          fmt::format("program '{}' is not an executable file; check its permissions (chmod +x)",
                      program));
    }
    return program;
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view dir = std::string_view(path).substr(start, end - start);
    const std::string candidate =
        fmt::format("{}/{}", dir.empty() ? std::string_view(".") : dir, program);
    if (IsExecutableFile(candidate)) return candidate;
    start = end + 1;
  }
  return Error(ErrorKind::kNotFound, fmt::format("program '{}' not found in PATH", program));
}

ChildProcess::ChildProcess(pid_t pid, int out_fd, int err_fd)
    : pid_(pid), out_fd_(out_fd), err_fd_(err_fd) {}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty())
    return Error(ErrorKind::kInvalidArgument, "no program to run (empty argument vector)");
  MOETUNE_ASSIGN_OR_RETURN(const std::string program, ResolveProgram(options.argv[0]));

  // Everything the child needs is prepared before fork: after fork only
  // async-signal-safe calls are allowed.
  std::vector<std::string> arg_strings = options.argv;
  const std::vector<char*> argv = NullTerminated(&arg_strings);
  std::vector<std::string> env_strings = ChildEnvironment(options);
  const std::vector<char*> envp = NullTerminated(&env_strings);

  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int exec_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd :
         {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) {
      if (fd >= 0) ::close(fd);
    }
  };
  if ((options.stdout_mode == OutputMode::kPipe && ::pipe2(out_pipe, O_CLOEXEC) != 0) ||
      (options.stderr_mode == OutputMode::kPipe && ::pipe2(err_pipe, O_CLOEXEC) != 0) ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    close_all();
    return Error(ErrorKind::kIo, fmt::format("cannot create pipes: {}", std::strerror(errno)));
  }
  auto out_target = OpenOutput(options.stdout_mode, options.stdout_file, out_pipe[1]);
  if (!out_target.ok()) {
    close_all();
    return out_target.take_error();
  }
  auto err_target = OpenOutput(options.stderr_mode, options.stderr_file, err_pipe[1]);
  if (!err_target.ok()) {
    close_all();
    if (*out_target != out_pipe[1]) ::close(*out_target);
    return err_target.take_error();
  }
  const int out_fd = *out_target;
  const int err_fd = *err_target;
  int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = ::getpid();

  EnsureCleanupGuardian();
  // Block termination signals across fork + registration so a Ctrl-C cannot
  // land between them and leave an unregistered child behind.
  const sigset_t old = BlockCleanupSignals();

  const pid_t pid = ::fork();
  if (pid == 0) {
    ExecChild({program.c_str(), argv.data(), envp.data(),
               options.cwd.empty() ? nullptr : options.cwd.c_str(), null_in, out_fd, err_fd,
               exec_pipe[1], parent});
  }
  const int fork_errno = errno;
  if (pid > 0) {
    ::setpgid(pid, pid);  // also in the parent: whichever runs first wins the race
    RegisterChildGroup(pid);
  }
  RestoreSignalMask(old);

  if (out_fd != out_pipe[1]) ::close(out_fd);
  if (err_fd != err_pipe[1]) ::close(err_fd);
  CloseAndForget({&null_in, &out_pipe[1], &err_pipe[1], &exec_pipe[1]});
  if (pid < 0) {
    close_all();
    return Error(ErrorKind::kIo, fmt::format("cannot start '{}': fork failed: {}", program,
                                             std::strerror(fork_errno)));
  }
  const int child_errno = ExecErrno(exec_pipe[0]);
  exec_pipe[0] = -1;
  std::unique_ptr<ChildProcess> child(new ChildProcess(pid, out_pipe[0], err_pipe[0]));
  if (child_errno != 0) {
    child->Terminate(std::chrono::milliseconds(0));
    return Error(child_errno == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                 fmt::format("cannot start '{}': {}", program, std::strerror(child_errno)));
  }
  if (child->out_fd_ >= 0) SetNonBlocking(child->out_fd_);
  if (child->err_fd_ >= 0) SetNonBlocking(child->err_fd_);
  return child;
}

ChildProcess::~ChildProcess() {
  if (running()) Terminate(std::chrono::milliseconds(1000));
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

std::optional<ExitStatus> ChildProcess::TryReap(bool block) {
  if (status_) return status_;
  siginfo_t info{};
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG));
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    // Already reaped by someone else (should not happen): treat as gone.
    UnregisterChildGroup(pid_);
    status_ = ExitStatus{};
    return status_;
  }
  if (info.si_pid == 0) return std::nullopt;
  // The leader is a zombie, so its pid (= the group id) cannot be reused yet:
  // sweeping the group now cannot hit an unrelated process. Unregistered
  // before the reap, after which the id may be reused at once.
  ::kill(-pid_, SIGKILL);
  UnregisterChildGroup(pid_);
  int ws = 0;
  while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
  }
  status_ = FromWaitStatus(ws);
  // SIGKILL takes effect when each member is next scheduled: on a busy machine a member can
  // still run for a moment. Wait (bounded: one in uninterruptible sleep may take longer) so
  // that whoever stopped this child finds nothing of it left. The group id stays reserved
  // while any member lives, so the scan cannot mistake another program's group for it.
  for (int i = 0; i < 200 && !LiveProcessesInGroup(pid_).empty(); ++i) SleepMs(5);
  return status_;
}

std::optional<ExitStatus> ChildProcess::Poll() { return TryReap(false); }

void ChildProcess::DrainFd(int& fd, LineBuffer& buffer, const LineCallback& callback, bool at_eof) {
  if (fd < 0) return;
  auto emit = [&] {
    if (buffer.dropped > 0) {
      buffer.partial += fmt::format(" [... {} more bytes cut by moetune]", buffer.dropped);
    }
    if (callback) callback(buffer.partial);
    buffer.partial.clear();
    buffer.dropped = 0;
  };
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      std::string_view data(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = data.find('\n')) != std::string_view::npos;
           data.remove_prefix(nl + 1)) {
        const std::size_t room = kMaxLineBytes - buffer.partial.size();
        buffer.partial.append(data.substr(0, std::min(nl, room)));
        buffer.dropped += nl > room ? nl - room : 0;
        emit();
      }
      const std::size_t room = kMaxLineBytes - buffer.partial.size();
      buffer.partial.append(data.substr(0, std::min(data.size(), room)));
      buffer.dropped += data.size() > room ? data.size() - room : 0;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !at_eof) return;
    // EOF (n == 0), an error, or the child is gone and nothing more is buffered.
    if (!buffer.partial.empty() || buffer.dropped > 0) emit();
    ::close(fd);
    fd = -1;
    return;
  }
}

std::optional<ExitStatus> ChildProcess::Pump(std::chrono::steady_clock::time_point deadline,
                                             const LineCallback& on_stdout,
                                             const LineCallback& on_stderr) {
  using Clock = std::chrono::steady_clock;
  if (status_) {
    // Already ended (e.g. terminated on timeout): hand over what is buffered.
    DrainFd(out_fd_, out_, on_stdout, true);
    DrainFd(err_fd_, err_, on_stderr, true);
    return status_;
  }
  while (true) {
    if (out_fd_ < 0 && err_fd_ < 0) {
      // Nothing to read: wait for the exit itself.
      if (auto s = TryReap(false)) return s;
      if (Clock::now() >= deadline) return std::nullopt;
      SleepMs(1);
      continue;
    }
    pollfd fds[2];
    nfds_t nfds = 0;
    if (out_fd_ >= 0) fds[nfds++] = {out_fd_, POLLIN, 0};
    if (err_fd_ >= 0) fds[nfds++] = {err_fd_, POLLIN, 0};
    const auto now = Clock::now();
    if (now >= deadline) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    // Wake up now and then: a grandchild may hold the pipes open after the
    // child itself exited.
    const int wait_ms = static_cast<int>(std::min<long long>(left + 1, 100));
    const int rc = ::poll(fds, nfds, wait_ms);
    if (rc < 0 && errno != EINTR) return TryReap(true);
    if (rc > 0) {
      DrainFd(out_fd_, out_, on_stdout, false);
      DrainFd(err_fd_, err_, on_stderr, false);
      continue;
    }
    if (TryReap(false)) {
      // The group was swept, so whatever is still buffered is all there is.
      DrainFd(out_fd_, out_, on_stdout, true);
      DrainFd(err_fd_, err_, on_stderr, true);
      return status_;
    }
  }
}

ExitStatus ChildProcess::Terminate(std::chrono::milliseconds grace) {
  if (status_) return *status_;
  if (auto s = TryReap(false)) return *s;
  ::kill(-pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto s = TryReap(false)) return *s;
    SleepMs(5);
  }
  ::kill(-pid_, SIGKILL);
  return *TryReap(true);
}

LogTail::LogTail(std::size_t tail_lines, Predicate skip, Predicate keep, std::size_t max_kept)
    : tail_lines_(tail_lines),
      skip_(std::move(skip)),
      keep_(std::move(keep)),
      max_kept_(max_kept) {}

void LogTail::Add(std::string_view line) {
  if (skip_ && skip_(line)) return;
  if (keep_ && kept_.size() < max_kept_ && keep_(line)) kept_.emplace_back(line);
  if (tail_lines_ == 0) return;
  tail_.emplace_back(line);
  if (tail_.size() > tail_lines_) tail_.pop_front();
}

Result<RunOutput> RunProcess(const RunOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  MOETUNE_ASSIGN_OR_RETURN(auto child, ChildProcess::Spawn(options.spawn));
  RunOutput out;
  LogTail tail(options.stderr_tail_lines);
  auto on_out = [&](std::string_view line) {
    if (options.capture_stdout && !out.stdout_truncated) {
      if (out.stdout_text.size() + line.size() + 1 > options.max_stdout_bytes) {
        out.stdout_truncated = true;
      } else {
        out.stdout_text.append(line);
        out.stdout_text.push_back('\n');
      }
    }
    if (options.on_stdout_line) options.on_stdout_line(line);
  };
  auto on_err = [&](std::string_view line) {
    if (options.stderr_tail_lines > 0) tail.Add(line);
    if (options.on_stderr_line) options.on_stderr_line(line);
  };
  const auto deadline = options.timeout ? start + *options.timeout : Clock::time_point::max();
  std::optional<ExitStatus> status = child->Pump(deadline, on_out, on_err);
  if (!status) {
    out.timed_out = true;
    child->Terminate(options.kill_grace);
    status = child->Pump(Clock::now(), on_out, on_err);
  }
  out.status = *status;
  out.stderr_tail = tail.tail();
  out.interrupted = TerminationRequested();
  out.wall_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace moetune
