#pragma once
/// llama-server lifecycle: start with a configuration on a free loopback port
/// (and on another one if that port is taken between the check and the
/// server's bind), wait for /health (with a timeout, watching for an early
/// exit), send completion requests and read their timings, stop cleanly
/// (SIGTERM, then SIGKILL to the whole process group). The destructor stops
/// the server, and the process-group registry (util/child_cleanup.h) kills it
/// whatever ends moetune, so no exit path leaves an orphan.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "engine/engine_info.h"
#include "engine/failure.h"
#include "engine/run_config.h"
#include "util/result.h"
#include "util/subprocess.h"

namespace moetune {

struct ServerOptions {
  /// The configuration to run (config/server_config.h). What it leaves to the
  /// engine is made explicit: -c 4096, one slot, -fit off (the placement as
  /// given); the address is 127.0.0.1 and the port Start's.
  ServerConfig config;
  std::chrono::milliseconds health_timeout{180000};
  /// Server log file; empty = a private temporary file (mkstemp) removed with
  /// the server.
  std::string log_file;
  std::vector<std::string> extra_args;
  /// The port to try first (tests occupy it); nullopt = a free one. When the
  /// server cannot bind its port, Start tries up to kPortAttempts in all.
  std::optional<int> first_port;
};

/// How many ports Start tries before it gives up on "address in use".
inline constexpr int kPortAttempts = 4;

/// Timings of one /completion request, from the server's `timings` object
/// plus the client-side wall time.
struct CompletionTimings {
  int prompt_n = 0;
  double prompt_ms = 0;
  double prompt_per_second = 0;
  int predicted_n = 0;
  double predicted_ms = 0;
  double predicted_per_second = 0;
  int cache_n = 0;
  /// Time to first token: prompt processing plus one decode step (derived
  /// from the server's timings, so network and JSON overhead are excluded).
  double ttft_ms = 0;
  double wall_ms = 0;  // the whole request as seen by moetune
  std::string content;
};

class LlamaServer {
 public:
  /// Starts llama-server and waits until /health answers 200. On failure the
  /// server is stopped and the error carries the failure kind and the
  /// server's own message.
  static Result<std::unique_ptr<LlamaServer>> Start(const EngineInfo& engine,
                                                    const ServerOptions& options);

  ~LlamaServer();
  LlamaServer(const LlamaServer&) = delete;
  LlamaServer& operator=(const LlamaServer&) = delete;

  int port() const { return port_; }
  const std::string& log_file() const { return log_file_; }
  /// Ports tried before this one worked (taken by another program meanwhile).
  int ports_tried() const { return ports_tried_; }
  pid_t pid() const { return child_ ? child_->pid() : -1; }
  const std::vector<std::string>& argv() const { return argv_; }
  double startup_seconds() const { return startup_seconds_; }

  /// POST /completion with `prompt`, generating `n_predict` tokens (prompt
  /// cache off, so every request measures prefill).
  Result<CompletionTimings> Complete(
      const std::string& prompt, int n_predict,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(300000));

  /// Stops the server (SIGTERM, up to `grace`, then SIGKILL) and returns how it ended.
  ExitStatus Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

  /// The last lines of the server's log (noise removed).
  std::vector<std::string> LogTail(std::size_t lines = 30) const;

 private:
  LlamaServer() = default;
  // One attempt on `port`; *port_taken is set when the server could not bind it.
  Status StartOn(const EngineInfo& engine, const ServerOptions& options, int port,
                 bool* port_taken);

  std::unique_ptr<ChildProcess> child_;
  std::vector<std::string> argv_;
  std::string log_file_;
  bool remove_log_ = false;
  int port_ = 0;
  int ports_tried_ = 0;
  double startup_seconds_ = 0;
};

/// A TCP port on 127.0.0.1 that is free right now.
Result<int> FindFreeLoopbackPort();

/// The llama-server argument vector for `options` on `port` (config/server_argv.h
/// ServerArgv of the configuration, then `extra_args`).
std::vector<std::string> ServerArgv(const EngineInfo& engine, const ServerOptions& options,
                                    int port);

/// Parses a /completion response body: one JSON object, or a streamed answer
/// (server-sent "data:" events, the timings in the last one, "stop": true).
Result<CompletionTimings> ParseCompletionResponse(const std::string& body);

/// True when llama-server's log says it could not bind its listening socket
/// ("couldn't bind HTTP server socket", tools/server/server.cpp).
bool IsPortInUseLog(const std::vector<std::string>& log_lines);

}  // namespace moetune
