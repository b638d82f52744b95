#include "report/watch_report.h"

#include <fmt/format.h>

#include "plan/placement.h"
#include "util/text.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {
namespace {

using nlohmann::json;

json Opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string Rate(const std::optional<double>& v) { return v ? FormatRate(*v) : "-"; }

std::string Ratio(const std::optional<double>& v) { return v ? fmt::format("x{:.2f}", *v) : ""; }

json CheckJson(const OverflowCheck& c) {
  return {{"verdict", JudgementName(c.judgement)},
          {"reason", c.reason},
          {"depth", Opt(c.depth)},
          {"expected_prefill_tps", Opt(c.expected_prefill_tps)},
          {"expected_decode_tps", Opt(c.expected_decode_tps)},
          {"prefill_ratio", Opt(c.prefill_ratio)},
          {"decode_ratio", Opt(c.decode_ratio)},
          {"baseline", c.baseline_kind}};
}

json GpusJson(const std::vector<GpuInfo>& gpus) {
  json out = json::array();
  for (const auto& g : gpus) {
    json procs = json::array();
    for (const auto& p : g.processes) {
      procs.push_back({{"pid", p.pid},
                       {"name", p.name},
                       {"used_bytes", p.used_bytes ? json(*p.used_bytes) : json(nullptr)}});
    }
    out.push_back({{"index", g.index},
                   {"name", g.name},
                   {"total_bytes", g.total_bytes},
                   {"free_bytes", g.free_bytes},
                   {"used_bytes", g.used_bytes},
                   {"processes", procs}});
  }
  return out;
}

std::string Depth(const std::optional<double>& d) {
  return d ? fmt::format("{:.0f}", *d) : std::string("?");
}

}  // namespace

json AlarmJson(const Alarm& a) {
  return {{"id", AlarmId(a.kind)},
          {"exit_code", AlarmExitCode(a.kind)},
          {"since_s", a.since_s},
          {"title", a.title},
          {"evidence", a.evidence},
          {"fix", a.fix},
          {"command", a.command},
          {"command_text", a.command.empty() ? json(nullptr) : json(ShellJoin(a.command))},
          {"n_cpu_moe_from", a.n_cpu_moe_from ? json(*a.n_cpu_moe_from) : json(nullptr)},
          {"n_cpu_moe_to", a.n_cpu_moe_to ? json(*a.n_cpu_moe_to) : json(nullptr)},
          {"data", a.data}};
}

json StartJson(const StartInfo& s) {
  json settings = json::object();
  json command = nullptr;
  if (s.settings) {
    for (const auto& [k, v] : GivenSettings(*s.settings)) settings[k] = v;
    command = s.settings->Command();
  }
  return {{"event", "start"},
          {"url", s.url},
          {"pid", s.pid ? json(*s.pid) : json(nullptr)},
          {"model", s.props.model_path},
          {"build", s.props.build_info},
          {"slots", s.props.total_slots},
          {"ctx_per_slot", s.props.n_ctx_per_slot},
          {"settings", settings},
          {"command", command},
          {"baseline", {{"kind", s.baseline_kind}, {"source", s.baseline}}},
          {"interval_s", s.interval_s},
          {"notes", s.notes}};
}

json StepJson(const MonitorStep& step) {
  const LiveSample& s = step.sample;
  json j = ObservationJson(s.observation);
  j["event"] = "sample";
  j["interval_s"] = s.interval_s;
  j["restarted"] = s.restarted;
  j["expected"] = {{"depth", Opt(step.expected_at_depth)},
                   {"prefill_tps", Opt(step.expected.prefill_tps)},
                   {"decode_tps", Opt(step.expected.decode_tps)}};
  j["judgement"] = CheckJson(step.check);
  j["slots"] = {{"total", s.slots_total},
                {"busy", s.slots_busy},
                {"max_depth", s.max_depth ? json(*s.max_depth) : json(nullptr)}};
  j["queue"] = {{"processing", s.requests_processing}, {"deferred", s.requests_deferred}};
  if (s.now.process) {
    const auto& p = *s.now.process;
    j["process"] = {{"pid", p.pid},
                    {"rss_bytes", p.rss_bytes},
                    {"rss_file_bytes", p.rss_file_bytes},
                    {"major_faults_total", p.major_faults},
                    {"major_faults", s.major_faults},
                    {"major_faults_per_s",
                     s.interval_s > 0 ? static_cast<double>(s.major_faults) / s.interval_s : 0.0},
                    {"mem_available_bytes",
                     s.mem_available_bytes ? json(*s.mem_available_bytes) : json(nullptr)}};
  } else {
    j["process"] = nullptr;
  }
  j["gpus"] = s.gpu_scanned ? GpusJson(s.gpus) : json(nullptr);
  json ids = json::array();
  for (const auto& a : step.active) ids.push_back(AlarmId(a.kind));
  j["alarms"] = ids;
  return j;
}

json ServerEventJson(const ServerEvent& e) {
  json j = {{"event", ServerEventName(e.kind)},
            {"t", e.time_s},
            {"pid", e.pid},
            {"port", e.port},
            {"restarts", e.restarts}};
  if (!e.argv.empty()) {
    j["command"] = e.argv;
    j["command_text"] = ShellJoin(e.argv);
  }
  if (e.kind == ServerEvent::Kind::kStarted) j["startup_s"] = e.startup_s;
  if (!e.status.empty()) j["status"] = e.status;
  if (!e.message.empty()) j["message"] = e.message;
  if (e.waited_s > 0) j["waited_s"] = e.waited_s;
  if (e.alarm) j["alarm"] = AlarmJson(*e.alarm);
  if (e.n_cpu_moe_from) j["n_cpu_moe_from"] = *e.n_cpu_moe_from;
  if (e.n_cpu_moe_to) j["n_cpu_moe_to"] = *e.n_cpu_moe_to;
  return j;
}

json EndJson(const Verdict& v, double elapsed_s, int exit_code) {
  json raised = json::array();
  for (const auto& a : v.raised) raised.push_back(AlarmJson(a));
  return {{"event", "end"},
          {"elapsed_s", elapsed_s},
          {"alarms", v.Ids()},
          {"raised", raised},
          {"exit_code", exit_code}};
}

std::string AlarmText(const Alarm& a, bool raised) {
  if (!raised) {
    return fmt::format("alarm cleared: {} ({})\n", AlarmId(a.kind), ForTerminal(a.title));
  }
  std::string o =
      fmt::format("ALARM {} (t={:.0f}s): {}\n", AlarmId(a.kind), a.since_s, ForTerminal(a.title));
  for (const auto& e : a.evidence) o += "  - " + ForTerminal(e) + "\n";
  o += "  fix: " + ForTerminal(a.fix) + "\n";
  return o;
}

std::string StepLine(const MonitorStep& step) {
  const LiveSample& s = step.sample;
  const Observation& o = s.observation;
  std::string line = fmt::format("t={:.1f}s", s.time_s);
  if (s.restarted) line += " server restarted;";
  if (o.prefill) {
    line += fmt::format(" prefill {} @ depth {} (expected {}{}{})", FormatRate(o.prefill->rate()),
                        Depth(o.prefill->depth), Rate(step.check.expected_prefill_tps),
                        step.check.prefill_ratio ? ", " : "", Ratio(step.check.prefill_ratio));
  }
  if (o.decode) {
    line +=
        fmt::format(" decode {} @ depth {}", FormatRate(o.decode->rate()), Depth(o.decode->depth));
  }
  if (!o.prefill && !o.decode) line += " idle";
  line += fmt::format("; slots {}/{} busy", s.slots_busy, s.slots_total);
  if (s.max_depth) line += fmt::format(", depth {}", *s.max_depth);
  if (s.requests_deferred > 0) line += fmt::format(", {:.0f} deferred", s.requests_deferred);
  if (s.now.process) {
    line += fmt::format("; RSS {}, {} major faults", FormatBytes(Bytes(s.now.process->rss_bytes)),
                        s.major_faults);
  }
  if (step.check.judgement != Judgement::kNotJudged)
    line += fmt::format(" [{}]", JudgementName(step.check.judgement));
  for (const auto& a : step.active) line += fmt::format(" ALARM:{}", AlarmId(a.kind));
  return line + "\n";
}

std::string ViewText(const StartInfo& info, const MonitorStep& step) {
  const LiveSample& s = step.sample;
  const Observation& o = s.observation;
  std::string v = fmt::format("moetune watch {}  pid {}  t={:.0f}s\n", info.url,
                              info.pid ? std::to_string(*info.pid) : "?", s.time_s);
  v += fmt::format("model {}, {} slot(s), context {} per slot\n",
                   ForTerminalField(info.props.model_path), info.props.total_slots,
                   info.props.n_ctx_per_slot);
  v += fmt::format("baseline: {}\n\n",
                   ForTerminal(step.baseline.empty() ? info.baseline : step.baseline));
  v += fmt::format("{:<9}{:>14}{:>14}{:>10}{:>10}\n", "", "now", "expected", "ratio", "depth");
  v += fmt::format("{:<9}{:>14}{:>14}{:>10}{:>10}\n", "prefill",
                   o.prefill ? FormatRate(o.prefill->rate()) : "-",
                   Rate(step.check.expected_prefill_tps), Ratio(step.check.prefill_ratio),
                   o.prefill ? Depth(o.prefill->depth) : "");
  v += fmt::format("{:<9}{:>14}{:>14}{:>10}{:>10}\n", "decode",
                   o.decode ? FormatRate(o.decode->rate()) : "-",
                   Rate(step.check.expected_decode_tps), Ratio(step.check.decode_ratio),
                   o.decode ? Depth(o.decode->depth) : "");
  v += fmt::format(
      "\nslots {}/{} busy, deepest context {}, queue {:.0f} processing / {:.0f} "
      "deferred\n",
      s.slots_busy, s.slots_total, s.max_depth ? std::to_string(*s.max_depth) : "?",
      s.requests_processing, s.requests_deferred);
  if (s.now.process) {
    const auto& p = *s.now.process;
    v += fmt::format("memory: RSS {} (file pages {}), {} major faults in {:.1f} s{}\n",
                     FormatBytes(Bytes(p.rss_bytes)), FormatBytes(Bytes(p.rss_file_bytes)),
                     s.major_faults, s.interval_s,
                     s.mem_available_bytes ? fmt::format(", MemAvailable {}",
                                                         FormatBytes(Bytes(*s.mem_available_bytes)))
                                           : "");
  }
  for (const auto& g : s.gpus) {
    v += fmt::format("GPU {} {}: {} used of {}, {} free\n", g.index, ForTerminalField(g.name),
                     FormatBytes(Bytes(g.used_bytes)), FormatBytes(Bytes(g.total_bytes)),
                     FormatBytes(Bytes(g.free_bytes)));
    for (const auto& p : g.processes) {
      v += fmt::format("  {} (pid {}){}\n", p.name.empty() ? "?" : ForTerminalField(p.name), p.pid,
                       p.used_bytes ? " " + FormatBytes(Bytes(*p.used_bytes)) : "");
    }
  }
  v += fmt::format("judgement: {} ({})\n", JudgementName(step.check.judgement),
                   ForTerminal(step.check.reason));
  if (step.active.empty()) v += "\nno alarm\n";
  for (const auto& a : step.active) v += "\n" + AlarmText(a);
  return v;
}

std::string ServerEventText(const ServerEvent& e) {
  switch (e.kind) {
    case ServerEvent::Kind::kStarted:
      return fmt::format("llama-server started (pid {}, port {}, ready in {:.1f} s): {}\n", e.pid,
                         e.port, e.startup_s, ForTerminal(ShellJoin(e.argv)));
    case ServerEvent::Kind::kExited:
      return fmt::format(
          "llama-server exited ({}): {}{}\n", e.status, ForTerminal(e.message),
          e.waited_s > 0 ? fmt::format("; restarting after {:.0f} s", e.waited_s) : "");
    case ServerEvent::Kind::kRestarted:
      return fmt::format("llama-server restarted (pid {}, restart {})\n", e.pid, e.restarts);
    case ServerEvent::Kind::kApplied:
      return fmt::format("applied: {}\n", ForTerminal(e.message));
    case ServerEvent::Kind::kGaveUp:
      return fmt::format("serve stops: {}\n", ForTerminal(e.message));
    case ServerEvent::Kind::kStopped:
      return fmt::format("llama-server stopped ({})\n", e.status);
    case ServerEvent::Kind::kUnreachable:
      return fmt::format("server not answering: {}\n", ForTerminal(e.message));
  }
  return "";
}

void JsonLinesSink::Write(const json& j) {
  const std::string line = DumpJson(j, -1) + "\n";
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}
void JsonLinesSink::OnStart(const StartInfo& info) { Write(StartJson(info)); }
void JsonLinesSink::OnStep(const MonitorStep& step) {
  Write(StepJson(step));
  for (const auto& e : step.events) OnAlarm(e);
}
void JsonLinesSink::OnAlarm(const AlarmEvent& e) {
  Write({{"event", e.raised ? "alarm" : "alarm_cleared"}, {"alarm", AlarmJson(e.alarm)}});
}
void JsonLinesSink::OnServer(const ServerEvent& e) {
  Write(ServerEventJson(e));
  // serve says on stderr too why it restarted the server or stopped (stdout is JSON).
  if (e.kind == ServerEvent::Kind::kApplied) {
    std::fprintf(stderr, "moetune serve: %s", ServerEventText(e).c_str());
  } else if (e.kind == ServerEvent::Kind::kGaveUp) {
    std::fprintf(stderr, "moetune serve: error: %s", ServerEventText(e).c_str());
  }
}
void JsonLinesSink::OnEnd(const Verdict& v, double elapsed_s) {
  Write(EndJson(v, elapsed_s, v.ExitCode()));
}

void TerminalSink::Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), out_);
  std::fflush(out_);
}
void TerminalSink::OnStart(const StartInfo& info) {
  info_ = info;
  std::string o = fmt::format("watching {} (pid {}), model {}, every {:.1f} s\nbaseline: {}\n",
                              info.url, info.pid ? std::to_string(*info.pid) : "unknown",
                              ForTerminalField(info.props.model_path), info.interval_s,
                              ForTerminal(info.baseline));
  for (const auto& n : info.notes) o += "note: " + ForTerminal(n) + "\n";
  Print(o);
}
void TerminalSink::OnStep(const MonitorStep& step) {
  if (redraw_) {
    Print("\x1b[H\x1b[2J" + ViewText(info_, step) + (events_.empty() ? "" : "\n" + events_));
    return;
  }
  Print(StepLine(step));
  for (const auto& e : step.events) OnAlarm(e);
}
void TerminalSink::OnAlarm(const AlarmEvent& e) {
  const std::string text = AlarmText(e.alarm, e.raised);
  if (redraw_) {
    events_ += e.raised ? "" : text;  // raised alarms are in the view while active
    return;
  }
  Print(text);
}
void TerminalSink::OnServer(const ServerEvent& e) {
  const std::string text = ServerEventText(e);
  // Giving up is the command's error: said once, on stderr (the exit code is 1).
  if (e.kind == ServerEvent::Kind::kGaveUp) {
    std::fprintf(stderr, "moetune serve: error: %s", text.c_str());
    return;
  }
  if (redraw_) {
    events_ += text;
    return;
  }
  Print(text);
}
void TerminalSink::OnEnd(const Verdict& v, double elapsed_s) {
  const auto ids = v.Ids();
  Print(fmt::format(
      "\nwatched {:.0f} s: {}\n", elapsed_s,
      ids.empty() ? "no alarm" : "alarms raised: " + fmt::format("{}", fmt::join(ids, ", "))));
}

std::string LogReplayJsonLines(const std::string& path, const ServerLog& log, const Replay& r,
                               const std::string& baseline) {
  std::string out;
  auto write = [&](const json& j) { out += DumpJson(j, -1) + "\n"; };
  write({{"event", "log"},
         {"path", path},
         {"lines", log.lines},
         {"sessions", log.sessions},
         {"requests", log.requests.size()},
         {"model", log.model_path},
         {"n_slots", log.n_slots},
         {"n_ctx_slot", log.n_ctx_slot},
         {"baseline", baseline},
         {"notes", log.notes}});
  for (const auto& e : r.start_events)
    write({{"event", e.raised ? "alarm" : "alarm_cleared"}, {"alarm", AlarmJson(e.alarm)}});
  for (const auto& e : r.entries) {
    json j = ObservationJson(e.observation);
    j["event"] = "request";
    if (e.request != nullptr) {
      j["slot"] = e.request->slot;
      j["task"] = e.request->task;
      j["session"] = e.request->session;
    }
    j["judgement"] = CheckJson(e.check);
    write(j);
    for (const auto& a : e.events)
      write({{"event", a.raised ? "alarm" : "alarm_cleared"}, {"alarm", AlarmJson(a.alarm)}});
  }
  json v = EndJson(r.verdict, 0, r.verdict.ExitCode());
  v["event"] = "verdict";
  v.erase("elapsed_s");
  v["observations"] = r.verdict.observations;
  write(v);
  return out;
}

std::string LogReplayText(const std::string& path, const ServerLog& log, const Replay& r,
                          const std::string& baseline) {
  std::string o = fmt::format(
      "moetune watch --log {}: {} request(s) in {} line(s), {} server start(s); model {}\n",
      ForTerminal(path), log.requests.size(), log.lines, log.sessions,
      log.model_path.empty() ? "?" : ForTerminal(log.model_path));
  o += "baseline: " + ForTerminal(baseline) + "\n";
  for (const auto& n : log.notes) o += "note: " + ForTerminal(n) + "\n";
  o += fmt::format("\n{:>8} {:>8} {:>10} {:>14} {:>8} {:>10} {:>14} {:>9}  {}\n", "t", "depth",
                   "prompt", "prefill", "ratio", "generated", "decode", "ratio", "judgement");
  for (const auto& e : r.entries) {
    const Observation& ob = e.observation;
    o += fmt::format("{:>8.1f} {:>8} {:>10} {:>14} {:>8} {:>10} {:>14} {:>9}  {}\n", ob.time_s,
                     ob.prefill ? Depth(ob.prefill->depth) : "",
                     ob.prefill ? fmt::format("{:.0f}", ob.prefill->tokens) : "",
                     ob.prefill ? FormatRate(ob.prefill->rate()) : "", Ratio(e.check.prefill_ratio),
                     ob.decode ? fmt::format("{:.0f}", ob.decode->tokens) : "",
                     ob.decode ? FormatRate(ob.decode->rate()) : "", Ratio(e.check.decode_ratio),
                     JudgementName(e.check.judgement));
  }
  o += "\n";
  for (const auto& e : r.start_events) o += AlarmText(e.alarm, e.raised);
  for (const auto& e : r.entries) {
    for (const auto& a : e.events) o += AlarmText(a.alarm, a.raised);
  }
  const auto ids = r.verdict.Ids();
  o += ids.empty() ? "verdict: no alarm\n"
                   : fmt::format("verdict: {} (exit code {})\n", fmt::join(ids, ", "),
                                 r.verdict.ExitCode());
  return o;
}

}  // namespace moetune
