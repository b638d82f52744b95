#pragma once
/// Output of `moetune watch` and `moetune serve`: JSON lines (one object per
/// event, fields in docs/cli.md) and the terminal view (redrawn in place on a
/// terminal, one line per sample otherwise), plus the report of `watch --log`.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "watch/alarm.h"
#include "watch/log_reader.h"
#include "watch/loop.h"
#include "watch/replay.h"

namespace moetune {

nlohmann::json AlarmJson(const Alarm& alarm);
nlohmann::json StartJson(const StartInfo& info);
/// A sample line: the trace fields (t, prefill, decode, concurrent) plus
/// expectation, judgement, slots, queue, process, GPUs and active alarms.
nlohmann::json StepJson(const MonitorStep& step);
nlohmann::json ServerEventJson(const ServerEvent& event);
nlohmann::json EndJson(const Verdict& verdict, double elapsed_s, int exit_code);

/// An alarm as a block of text (title, evidence, fix).
std::string AlarmText(const Alarm& alarm, bool raised = true);
/// One line per sample (logs, pipes).
std::string StepLine(const MonitorStep& step);
/// The whole view, for redrawing a terminal.
std::string ViewText(const StartInfo& info, const MonitorStep& step);
std::string ServerEventText(const ServerEvent& event);

/// Writes JSON lines to `out` (flushed after each).
class JsonLinesSink : public WatchSink {
 public:
  explicit JsonLinesSink(std::FILE* out) : out_(out) {}
  void OnStart(const StartInfo& info) override;
  void OnStep(const MonitorStep& step) override;
  void OnAlarm(const AlarmEvent& event) override;
  void OnServer(const ServerEvent& event) override;
  void OnEnd(const Verdict& verdict, double elapsed_s) override;

 private:
  void Write(const nlohmann::json& j);
  std::FILE* out_;
};

/// The terminal view: with `redraw`, the screen is redrawn in place at each
/// sample (alarms stay listed below); otherwise one line per sample and a
/// block for each alarm raised or cleared.
class TerminalSink : public WatchSink {
 public:
  TerminalSink(std::FILE* out, bool redraw) : out_(out), redraw_(redraw) {}
  void OnStart(const StartInfo& info) override;
  void OnStep(const MonitorStep& step) override;
  void OnAlarm(const AlarmEvent& event) override;
  void OnServer(const ServerEvent& event) override;
  void OnEnd(const Verdict& verdict, double elapsed_s) override;

 private:
  void Print(const std::string& text);
  std::FILE* out_;
  bool redraw_;
  StartInfo info_;
  std::string events_;  // recent server events and alarm changes (redraw mode)
};

/// `watch --log`: JSON lines (log, request..., alarm..., verdict) or text.
std::string LogReplayJsonLines(const std::string& path, const ServerLog& log, const Replay& replay,
                               const std::string& baseline);
std::string LogReplayText(const std::string& path, const ServerLog& log, const Replay& replay,
                          const std::string& baseline);

}  // namespace moetune
