#pragma once
/// Keeping a llama-server up for `moetune serve`: start it (its output
/// appended to a log file), wait until /health answers 200 (or it exits, or a
/// timeout passes), notice when it dies and start it again after a pause that
/// doubles each time (1 s, 2 s, 4 s ... at most 60 s) up to a number of
/// restarts, and stop it (SIGTERM, then SIGKILL to its process group). The
/// child is a ChildProcess, so the process-group registry kills it when
/// moetune gets SIGINT/SIGTERM: no exit path leaves an orphan.

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"
#include "util/subprocess.h"

namespace moetune {

struct SupervisorOptions {
  /// The whole llama-server argument vector (the engine's path first),
  /// including --host/--port/--metrics.
  std::vector<std::string> argv;
  /// Where /health is asked (a wildcard bind address is reached on loopback).
  std::string host = "127.0.0.1";
  int port = 8080;
  /// The server's stdout and stderr are appended here.
  std::string log_file;
  std::chrono::milliseconds health_timeout{600000};
  int max_restarts = 5;
  std::chrono::milliseconds backoff_initial{1000};
  std::chrono::milliseconds backoff_max{60000};
  /// After this long up, earlier crashes no longer count toward the limit.
  std::chrono::milliseconds stable_after{600000};
  /// Refuse a port another program already listens on, and check after
  /// /health that the server answering is the child (its process group):
  /// otherwise moetune would watch a stranger while its own server died.
  /// Unit tests that answer /health from the test process turn it off.
  bool check_port_owner = true;
  /// The RPC servers in argv (--rpc): when the server dies, the one that no
  /// longer answers is named (engine/rpc_host.h).
  std::vector<std::string> rpc_hosts;
};

/// What a Poll found.
struct SupervisorCheck {
  bool exited = false;     // the server had died
  ExitStatus status;       // how (when exited)
  std::string message;     // the server's own last words
  bool restarted = false;  // and was started again
  double waited_s = 0;     // backoff before the restart
  bool gave_up = false;    // the restart limit was reached (or the restart failed)
  std::string error;       // why it gave up
};

class ServerSupervisor {
 public:
  explicit ServerSupervisor(SupervisorOptions options);
  ~ServerSupervisor();
  ServerSupervisor(const ServerSupervisor&) = delete;
  ServerSupervisor& operator=(const ServerSupervisor&) = delete;

  /// Starts the server and waits for /health. On failure the server is
  /// stopped and the error quotes the server's log (failure kind and message).
  Status Start();
  /// Non-blocking unless the server died: then waits the backoff and restarts it.
  SupervisorCheck Poll();
  /// The server is alive but stopped answering: stops it and restarts it like
  /// a crash (the same backoff and limit). `why` goes into the check's message.
  SupervisorCheck RestartHung(const std::string& why);
  /// Stops the server and starts it with `argv` (serve --apply).
  Status Replace(std::vector<std::string> argv);
  /// Stops the server; returns how it ended.
  ExitStatus Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

  pid_t pid() const { return child_ ? child_->pid() : -1; }
  bool running() const { return child_ && child_->running(); }
  const std::vector<std::string>& argv() const { return options_.argv; }
  int restarts() const { return restarts_; }
  double startup_seconds() const { return startup_seconds_; }
  /// The last lines of the log, noise removed (reads at most its last 64 KiB).
  std::vector<std::string> LogTail(std::size_t lines = 20) const;

 private:
  Status StartOnce();
  Status CheckPortIsFree() const;
  Status CheckChildAnswers() const;
  // After the server ended: the restart policy (limit, backoff, start).
  SupervisorCheck AfterExit(SupervisorCheck c);

  SupervisorOptions options_;
  std::unique_ptr<ChildProcess> child_;
  int restarts_ = 0;
  std::chrono::steady_clock::time_point started_at_;
  double startup_seconds_ = 0;
};

/// The last `lines` lines of a file, reading at most its last `max_bytes`.
std::deque<std::string> TailOfFile(const std::string& path, std::size_t lines,
                                   std::size_t max_bytes = std::size_t{64} * 1024);

}  // namespace moetune
