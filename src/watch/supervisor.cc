#include "watch/supervisor.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "engine/failure.h"
#include "util/units.h"
#include "watch/log_reader.h"

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

ServerSupervisor::ServerSupervisor(SupervisorOptions options) : options_(std::move(options)) {}

ServerSupervisor::~ServerSupervisor() { Stop(std::chrono::milliseconds(2000)); }

std::vector<std::string> ServerSupervisor::LogTail(std::size_t lines) const {
  const auto t = TailOfFile(options_.log_file, lines);
  return {t.begin(), t.end()};
}

Status ServerSupervisor::StartOnce() {
  // The command first, so that `watch --log` judges with the same settings.
  {
    std::ofstream log(options_.log_file, std::ios::app);
    if (log) log << ServeCommandLine(options_.argv) << "\n";
  }
  SpawnOptions s;
  s.argv = options_.argv;
  s.stdout_mode = OutputMode::kFile;
  s.stdout_file = options_.log_file;
  s.stderr_mode = OutputMode::kFile;
  s.stderr_file = options_.log_file;
  const auto t0 = std::chrono::steady_clock::now();
  MOETUNE_ASSIGN_OR_RETURN(child_, ChildProcess::Spawn(s));
  httplib::Client client(options_.host, options_.port);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(5, 0);
  const auto deadline = t0 + options_.health_timeout;
  while (true) {
    if (auto st = child_->Poll()) {
      const auto tail = TailOfFile(options_.log_file, 30);
      std::vector<std::string> diag;
      for (const auto& l : tail) {
        if (IsDiagnosticLine(l)) diag.push_back(l);
      }
      const EngineFailure f = ClassifyFailure(*st, false, 0, diag, tail);
      child_.reset();
      return Error(ErrorKind::kEngine,
                   fmt::format("llama-server exited before it was ready ({}, {}): {} (log: {})",
                               FailureKindName(f.kind), f.exit, f.message, options_.log_file));
    }
    if (TerminationRequested()) {
      Stop(std::chrono::milliseconds(2000));
      return Error(ErrorKind::kEngine, "interrupted while llama-server was starting");
    }
    const auto res = client.Get("/health");
    const bool late = std::chrono::steady_clock::now() > deadline;
    if (res && res->status == 200 && !late) break;
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
  started_at_ = std::chrono::steady_clock::now();
  startup_seconds_ = std::chrono::duration<double>(started_at_ - t0).count();
  return OkStatus();
}

Status ServerSupervisor::Start() { return StartOnce(); }

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
  c.message = ClassifyFailure(*st, false, 0, diag, tail).message;
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
