#include "watch/supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "engine/failure.h"
#include "engine/rpc_host.h"
#include "util/http_get.h"
#include "util/output_file.h"
#include "util/units.h"
#include "util/utf8.h"
#include "watch/log_reader.h"
#include "watch/process_info.h"

namespace moetune {

std::deque<std::string> TailOfFile(const std::string& path, std::size_t lines,
                                   std::size_t max_bytes) {
  std::deque<std::string> tail;
  std::ifstream f(path, std::ios::binary);
  if (!f) return tail;
  f.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(std::max<std::streamoff>(0, f.tellg()));
  const std::size_t start = size > max_bytes ? size - max_bytes : 0;
  f.seekg(static_cast<std::streamoff>(start));
  std::string line;
  bool first = start > 0;  // the first line is probably cut
  while (std::getline(f, line)) {
    if (first) {
      first = false;
      continue;
    }
    if (IsNoiseLine(line)) continue;
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  return tail;
}

namespace {

// One line appended to the server log; a failure (a full disk, a file size
// limit) is an error that names the log, not a line silently missing.
Status AppendToLog(const std::string& path, const std::string& text) {
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0644);
  if (fd < 0) {
    return Error(ErrorKind::kIo,
                 fmt::format("cannot open the server log '{}': {}", path, std::strerror(errno)));
  }
  std::size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    return Error(ErrorKind::kIo,
                 fmt::format("cannot write the server log '{}': {}", path, std::strerror(err)));
  }
  return OkStatus();
}

}  // namespace

ServerSupervisor::ServerSupervisor(SupervisorOptions options) : options_(std::move(options)) {}

ServerSupervisor::~ServerSupervisor() { Stop(std::chrono::milliseconds(2000)); }

std::vector<std::string> ServerSupervisor::LogTail(std::size_t lines) const {
  const auto t = TailOfFile(options_.log_file, lines);
  return {t.begin(), t.end()};
}

Status ServerSupervisor::StartOnce() {
  // The command first, so that `watch --log` judges with the same settings.
  MOETUNE_TRY(AppendToLog(options_.log_file, ServeCommandLine(options_.argv) + "\n"));
  SpawnOptions s;
  s.argv = options_.argv;
  s.stdout_mode = OutputMode::kFile;
  s.stdout_file = options_.log_file;
  s.stderr_mode = OutputMode::kFile;
  s.stderr_file = options_.log_file;
  const auto t0 = std::chrono::steady_clock::now();
  MOETUNE_TRY(CheckPortIsFree());
  MOETUNE_ASSIGN_OR_RETURN(child_, ChildProcess::Spawn(s));
  const auto deadline = t0 + options_.health_timeout;
  while (true) {
    if (auto st = child_->Poll()) {
      const auto tail = TailOfFile(options_.log_file, 30);
      std::vector<std::string> diag;
      for (const auto& l : tail) {
        if (IsDiagnosticLine(l)) diag.push_back(l);
      }
      EngineFailure f = ClassifyFailure(*st, false, 0, diag, tail);
      AttributeRpcFailure(options_.rpc_hosts, &f);
      child_.reset();
      return Error(ErrorKind::kEngine,
                   fmt::format("llama-server exited before it was ready ({}, {}): {} (log: {})",
                               FailureKindName(f.kind), f.exit, f.message, options_.log_file));
    }
    if (TerminationRequested()) {
      Stop(std::chrono::milliseconds(2000));
      return Error(ErrorKind::kEngine, "interrupted while llama-server was starting");
    }
    HttpLimits limits;  // util/http_get.h: a total deadline, capped headers and body
    limits.deadline = std::chrono::milliseconds(5000);
    const auto res = HttpGet(options_.host, options_.port, "/health", limits);
    const bool late = std::chrono::steady_clock::now() > deadline;
    if (res.ok() && res->status == 200 && !late) break;
    if (late) {
      Stop(std::chrono::milliseconds(2000));
      const auto tail = LogTail(1);
      return Error(
          ErrorKind::kEngine,
          fmt::format("timeout: llama-server was not healthy within {}; last log line: "
                      "{} (log: {})",
                      FormatSeconds(std::chrono::duration<double>(options_.health_timeout).count()),
                      tail.empty() ? "" : tail.back(), options_.log_file));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (auto st = CheckChildAnswers(); !st.ok()) {
    Stop(std::chrono::milliseconds(2000));
    return st;
  }
  started_at_ = std::chrono::steady_clock::now();
  startup_seconds_ = std::chrono::duration<double>(started_at_ - t0).count();
  return OkStatus();
}

namespace {

std::string DescribeHolder(const SysRoot& proc, int port) {
  const auto pid = FindListeningPid(proc, port);
  if (!pid) return "another program (its process is not visible from here)";
  std::string cmd;
  for (const auto& a : ReadCmdline(proc, *pid)) cmd += (cmd.empty() ? "" : " ") + a;
  if (cmd.size() > 120) cmd = cmd.substr(0, 117) + "...";
  // A command line may hold any bytes, newlines included: one value, one line.
  return cmd.empty() ? fmt::format("process {}", *pid)
                     : fmt::format("process {} ({})", *pid, ForTerminalField(cmd));
}

}  // namespace

// Another program listening on the port would answer /health in place of the
// server we start (which then fails to bind and dies): refused before starting.
Status ServerSupervisor::CheckPortIsFree() const {
  if (!options_.check_port_owner) return OkStatus();
  const SysRoot proc("/");
  if (ListeningSocketInodes(proc, options_.port).empty()) return OkStatus();
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("port {} is already in use by {}; the llama-server moetune starts "
                           "could not listen there and the other program would answer in its "
                           "place. Stop that program or give another --port",
                           options_.port, DescribeHolder(proc, options_.port)));
}

// The server that answered /health must be the child we started (or one of
// its process group): a program that took the port in the meantime is not.
Status ServerSupervisor::CheckChildAnswers() const {
  if (!options_.check_port_owner || !child_) return OkStatus();
  const SysRoot proc("/");
  const auto inodes = ListeningSocketInodes(proc, options_.port);
  std::vector<pid_t> ours = LiveProcessesInGroup(child_->pid());
  ours.push_back(child_->pid());
  for (pid_t pid : ours) {
    if (HoldsSocket(proc, pid, inodes)) return OkStatus();
  }
  return Error(ErrorKind::kEngine,
               fmt::format("port {} is answered by {}, not by the llama-server moetune started "
                           "(pid {}); stop that program or give another --port",
                           options_.port, DescribeHolder(proc, options_.port), child_->pid()));
}

Status ServerSupervisor::Start() {
  // The log follows the rule of every file a command writes (a regular file
  // or a new one, never an input such as the model or the --from file); it is
  // read back, so a FIFO or device is refused rather than blocking on it.
  OutputFileOptions rules;
  rules.role = "--server-log";
  rules.regular_only = true;
  if (auto t = CheckOutputTarget(options_.log_file, rules); !t.ok()) return t.error();
  return StartOnce();
}

SupervisorCheck ServerSupervisor::Poll() {
  SupervisorCheck c;
  if (!child_) {
    c.gave_up = true;
    c.error = "llama-server is not running";
    return c;
  }
  auto st = child_->Poll();
  if (!st) return c;
  c.exited = true;
  c.status = *st;
  const auto tail = TailOfFile(options_.log_file, 30);
  std::vector<std::string> diag;
  for (const auto& l : tail) {
    if (IsDiagnosticLine(l)) diag.push_back(l);
  }
  EngineFailure f = ClassifyFailure(*st, false, 0, diag, tail);
  AttributeRpcFailure(options_.rpc_hosts, &f);
  c.message = f.message;
  child_.reset();
  return AfterExit(std::move(c));
}

SupervisorCheck ServerSupervisor::RestartHung(const std::string& why) {
  SupervisorCheck c;
  if (!child_) {
    c.gave_up = true;
    c.error = "llama-server is not running";
    return c;
  }
  c.exited = true;
  c.status = Stop(std::chrono::milliseconds(5000));
  c.message = why;
  return AfterExit(std::move(c));
}

SupervisorCheck ServerSupervisor::AfterExit(SupervisorCheck c) {
  if (std::chrono::steady_clock::now() - started_at_ >= options_.stable_after) restarts_ = 0;
  if (restarts_ >= options_.max_restarts) {
    c.gave_up = true;
    c.error = fmt::format(
        "llama-server ended ({}) and was already restarted {} time(s), the "
        "limit (--max-restarts); last words: {}",
        c.status.Describe(), restarts_, c.message);
    return c;
  }
  auto wait = options_.backoff_initial;
  for (int i = 0; i < restarts_ && wait < options_.backoff_max; ++i) wait *= 2;
  wait = std::min(wait, options_.backoff_max);
  c.waited_s = std::chrono::duration<double>(wait).count();
  std::this_thread::sleep_for(wait);
  ++restarts_;
  auto started = StartOnce();
  if (!started.ok()) {
    c.gave_up = true;
    c.error = started.error().message();
    return c;
  }
  c.restarted = true;
  return c;
}

Status ServerSupervisor::Replace(std::vector<std::string> argv) {
  Stop();
  options_.argv = std::move(argv);
  return StartOnce();
}

ExitStatus ServerSupervisor::Stop(std::chrono::milliseconds grace) {
  if (!child_) return ExitStatus{};
  const ExitStatus st = child_->Terminate(grace);
  child_.reset();
  return st;
}

}  // namespace moetune
