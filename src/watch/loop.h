#pragma once
/// The two long-running loops: `moetune watch URL` (sample, judge, report,
/// until a duration, an alarm with --exit-on-alarm, or Ctrl-C) and `moetune
/// serve` (the same on a server it supervises, restarting it when it dies and,
/// with --apply, restarting it with the fix when an overflow alarm fires and
/// no slot is busy). Output goes through a WatchSink that the command layer
/// implements with the report/ exporters (terminal view or JSON lines).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "watch/monitor.h"
#include "watch/supervisor.h"

namespace moetune {

/// What is known when watching starts.
struct StartInfo {
  std::string url;
  std::optional<pid_t> pid;
  ServerProps props;
  std::optional<ServerSettings> settings;  // the running command line
  std::string baseline_kind, baseline;     // Baseline::Kind(), Describe()
  double interval_s = 0;
  std::vector<std::string> notes;
};

/// Something that happened to a supervised server (serve).
struct ServerEvent {
  enum class Kind { kStarted, kExited, kRestarted, kApplied, kGaveUp, kStopped, kUnreachable };
  Kind kind = Kind::kStarted;
  double time_s = 0;
  pid_t pid = -1;
  int port = 0;
  std::vector<std::string> argv;
  double startup_s = 0;
  int restarts = 0;
  std::string status;          // how it ended ("signal 9 (SIGKILL)")
  std::string message;         // the server's (or moetune's) words
  double waited_s = 0;         // backoff before a restart
  std::optional<Alarm> alarm;  // kApplied: the alarm that caused it
  std::optional<int> n_cpu_moe_from, n_cpu_moe_to;
};
const char* ServerEventName(ServerEvent::Kind kind);

class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual void OnStart(const StartInfo& info) = 0;
  virtual void OnStep(const MonitorStep& step) = 0;
  /// Alarms raised or cleared outside a step (settings at start).
  virtual void OnAlarm(const AlarmEvent& event) = 0;
  virtual void OnServer(const ServerEvent& event) = 0;
  /// The end: the verdict over the whole run.
  virtual void OnEnd(const Verdict& verdict, double elapsed_s) = 0;
};

struct LoopOptions {
  std::chrono::milliseconds interval{5000};
  /// Stop after this long (nullopt: until interrupted).
  std::optional<std::chrono::milliseconds> duration;
  /// One sample over one interval, then stop.
  bool once = false;
  /// Stop at the first alarm, with its exit code.
  bool exit_on_alarm = false;
  /// Give up when the server has not answered for this long.
  std::chrono::milliseconds unreachable_limit{60000};
};

/// Watches until the end condition; returns the exit code (0, or the
/// verdict's alarm code; 1 when the server stayed unreachable).
int RunWatchLoop(Monitor& monitor, const LoopOptions& options, WatchSink& sink,
                 const std::string& url);

struct ServeOptions {
  SupervisorOptions supervisor;
  LoopOptions loop;
  std::chrono::milliseconds timeout{10000};  // each HTTP request to the server
  SessionOptions session;
  std::function<std::vector<GpuInfo>()> gpu_scan;
  bool apply = false;
  /// --apply acts at most this often per run (a fix that does not help is
  /// not repeated without end).
  int max_applies = 3;
  /// The baseline for another --n-cpu-moe after --apply (may return null).
  std::function<std::shared_ptr<const Baseline>(int n_cpu_moe)> baseline_for;
};

/// Starts the server, watches it, supervises it. Returns the exit code: 1
/// when the server could not be started or died more often than allowed
/// (the reason went to the sink), else as RunWatchLoop.
int RunServe(const ServeOptions& options, WatchSink& sink);

}  // namespace moetune
