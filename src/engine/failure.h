#pragma once
/// Every way the engine can fail, as data: the kind (what moetune does next
/// depends on it: an out-of-memory placement is a boundary, a crash is not)
/// and the engine's own message.

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "util/subprocess.h"

namespace moetune {

enum class FailureKind {
  kOutOfMemoryDevice,  // GPU memory exhausted, or an RPC device's (rpc_host names its server)
  kOutOfMemoryHost,    // host RAM exhausted (allocation, mmap/mlock)
  kModelLoad,          // model missing, corrupt or unsupported
  kCrash,              // killed by a signal (assert, segfault, killed)
  kTimeout,            // no result within the time limit (moetune killed it)
  kUnparseable,        // exited normally but printed no usable result
  kEngineMissing,      // the tool is missing or not executable
  kInvalidConfig,      // the engine rejected an argument value
  kRpcHost,            // an RPC host (ggml-rpc-server) is unreachable, answers garbage or died
  kEngineError,        // any other non-zero exit
};

/// Stable snake_case name used in JSON output: "oom_device", "timeout", ...
const char* FailureKindName(FailureKind kind);

struct EngineFailure {
  FailureKind kind = FailureKind::kEngineError;
  /// The engine's own words (the most specific lines), or moetune's
  /// description when the engine said nothing (timeout, signal).
  std::string message;
  /// How the process ended ("exit code 1", "signal 6 (SIGABRT)").
  std::string exit;
  /// Last lines of the engine's stderr (noise removed), for reports.
  std::vector<std::string> stderr_tail;
  /// The signal that ended the process (0 when it exited): a crash by SIGKILL
  /// or SIGTERM from outside says nothing about the configuration.
  int signal = 0;
  /// kRpcHost: the RPC server (HOST:PORT) that failed, "" when the engine's
  /// output and a check of the run's hosts could not tell which one.
  /// kOutOfMemoryDevice: the ggml-rpc-server whose device ran out of memory
  /// (the engine names it in the buffer: "RPC0[HOST:PORT]"), "" for a GPU.
  std::string rpc_host{};
};

/// True for log lines that never explain anything (the Debian build's
/// "ggml_backend_load_best: failed to enumerate ..." on every start).
bool IsNoiseLine(std::string_view line);

/// True for lines worth keeping beyond the tail: errors, asserts, allocation failures.
bool IsDiagnosticLine(std::string_view line);

/// Classifies a finished engine process. `diagnostics` are IsDiagnosticLine
/// lines (in order), `tail` the last stderr lines.
EngineFailure ClassifyFailure(const ExitStatus& status, bool timed_out, double timeout_seconds,
                              const std::vector<std::string>& diagnostics,
                              const std::deque<std::string>& tail);

}  // namespace moetune
