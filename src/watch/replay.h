#pragma once
/// Judging a past session: the requests of a llama-server log (`moetune
/// watch --log`) or a recorded trace (tests/fixtures/watch, or the output of
/// `watch --json`) go through the same WatchSession as a live watch, so the
/// verdict is the same for the same work.

#include <string>
#include <vector>

#include "util/result.h"
#include "watch/log_reader.h"
#include "watch/session.h"

namespace moetune {

struct ReplayEntry {
  Observation observation;
  OverflowCheck check;
  std::vector<AlarmEvent> events;
  const LogRequest* request = nullptr;  // for a log: the request
};

struct Replay {
  std::vector<ReplayEntry> entries;
  std::vector<AlarmEvent> start_events;  // settings at the start of the log
  std::vector<Alarm> active_at_end;
  Verdict verdict;
};

/// Judges observations in order.
Replay ReplayObservations(const std::vector<Observation>& observations, SessionOptions options);

/// Judges the requests of a log. What the log says about the server (model,
/// slots, context per slot) is checked against `options.expected` like /props.
/// `log` must outlive the result (entries point at its requests).
Replay ReplayLog(const ServerLog& log, SessionOptions options);

/// Reads a trace file: JSON lines with `t`, `prefill`, `decode` (ObservationJson);
/// lines with another "event" than "sample" or "request" are skipped. Errors
/// name the line.
Result<std::vector<Observation>> ReadTrace(const std::string& path);
Result<std::vector<Observation>> ParseTrace(const std::string& text);

}  // namespace moetune
