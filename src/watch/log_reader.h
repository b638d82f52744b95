#pragma once
/// Reading a past llama-server session from its log, for `moetune watch
/// --log FILE`. What the installed build (0.7.0, build 11669) writes at its
/// default verbosity, per request (tools/server/server-context.cpp,
/// server_slot::print_timings and release):
///
///   0.05.185.606 I slot print_timing: id  0 | task 0 | prompt eval time =    1639.03 ms /   710
///   tokens (...) 0.05.185.625 I slot print_timing: id  0 | task 0 |        eval time =      92.56
///   ms /    16 tokens (...) 0.05.185.664 I slot      release: id  0 | task 0 | stop processing:
///   n_tokens = 725, truncated = 0
///
/// The timestamp is minutes.seconds.milliseconds.microseconds since start.
/// "prompt eval" counts only the tokens processed (not those reused from the
/// prompt cache), and n_tokens at release is the slot's context after the
/// request, so the prefill started at depth n_tokens - prompt - (generated -
/// 1). Older builds print the timing lines without the slot prefix on the
/// lines after a "print_timing: id N | task T |" header, and "n_past = X"
/// instead of "n_tokens = X"; both are read. A line "llama_server:
/// initializing" (or "server is listening") starts a new server process: the
/// log of a restarted server holds several sessions.
///
/// The file is untrusted: regular files only (a FIFO or device is refused
/// before it is read), at most `max_bytes`, lines cut at 64 KiB, and binary
/// data (a NUL byte) is refused with its offset.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"
#include "watch/observation.h"

namespace moetune {

struct LogRequest {
  int slot = -1;
  int64_t task = -1;
  std::optional<double> time_s;  // log timestamp of the timing line
  int64_t prompt_tokens = 0;
  double prompt_ms = 0;
  int64_t generated_tokens = 0;
  double generated_ms = 0;
  std::optional<int64_t> n_tokens_end;  // slot context at release
  int session = 0;                      // which server start it belongs to
  bool concurrent = false;              // another slot was busy at the same time

  /// The request as an observation (mid depths from n_tokens_end).
  Observation ToObservation(double fallback_time_s) const;
};

/// The line `moetune serve` appends to the log before each start of
/// llama-server: this tag, then the argument vector as a JSON array. A log
/// written by serve so carries the command the live watch judged with
/// (llama-server's own output does not say -ub, -t, --n-cpu-moe ...).
inline constexpr std::string_view kServeCommandTag = "moetune serve: llama-server command: ";
std::string ServeCommandLine(const std::vector<std::string>& argv);

struct ServerLog {
  std::vector<LogRequest> requests;
  /// The commands of the serve command lines, in order (empty for a log
  /// llama-server wrote without serve).
  std::vector<std::vector<std::string>> commands;
  int sessions = 0;  // server starts seen (0 when the log has no start line)
  std::string model_path;
  int n_slots = 0;
  int64_t n_ctx_slot = 0;
  int64_t lines = 0;
  std::vector<std::string> notes;
};

/// Incremental parser: feed lines in order, then Finish().
class ServerLogParser {
 public:
  void Feed(std::string_view line);
  ServerLog Finish();

 private:
  struct Pending {
    LogRequest request;
    bool has_prompt = false, has_eval = false;
  };
  void Complete(int64_t task);
  /// A serve command line (the JSON after kServeCommandTag): kept, or a note.
  void FeedServeCommand(std::string_view json);
  /// The current task starts on the current slot: concurrent with the tasks
  /// of the other slots.
  void StartTask();

  ServerLog log_;
  std::map<int64_t, Pending> pending_;  // by task
  std::map<int, int64_t> active_;       // slot -> task being processed
  int slot_ = -1;
  int64_t task_ = -1;
};

/// Parses a whole log text (tests, small inputs).
ServerLog ParseServerLog(std::string_view text);

struct LogReadOptions {
  int64_t max_bytes = int64_t{1} << 30;
};

/// Reads and parses the file. Errors: not found, not a regular file, too
/// large, binary, or no request timing line at all (then it is not a
/// llama-server log, or one written with timings turned off).
Result<ServerLog> ReadServerLog(const std::string& path, const LogReadOptions& options = {});

}  // namespace moetune
