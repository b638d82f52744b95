#include "watch/loop.h"

#include <fmt/format.h>

#include <thread>

#include "util/subprocess.h"

namespace moetune {
namespace {

using Clock = std::chrono::steady_clock;

// Sleeps until `t` in short steps (a termination signal ends moetune anyway;
// the steps keep the wait responsive to TerminationRequested).
void SleepUntil(Clock::time_point t) {
  while (Clock::now() < t && !TerminationRequested()) {
    const auto left = t - Clock::now();
    std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::milliseconds(50)));
  }
}

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

StartInfo MakeStartInfo(Monitor& m, const std::string& url, const LoopOptions& o) {
  StartInfo s;
  s.url = url;
  s.pid = m.sampler().pid();
  s.props = m.sampler().props();
  s.settings = m.sampler().settings();
  s.baseline_kind = m.session().baseline().Kind();
  s.baseline = m.session().baseline().Describe();
  s.interval_s = std::chrono::duration<double>(o.interval).count();
  s.notes = m.sampler().notes();
  s.notes.insert(s.notes.end(), m.session().notes().begin(), m.session().notes().end());
  return s;
}

// One step with its output; returns the exit code when the loop must end.
std::optional<int> StepOnce(Monitor& m, const LoopOptions& o, WatchSink& sink,
                            Clock::time_point* last_ok, ServerEvent* unreachable) {
  auto step = m.Step();
  if (!step.ok()) {
    unreachable->message = step.error().message();
    unreachable->time_s = 0;
    sink.OnServer(*unreachable);
    if (Clock::now() - *last_ok >= o.unreachable_limit) return 1;
    return std::nullopt;
  }
  *last_ok = Clock::now();
  sink.OnStep(*step);
  if (o.exit_on_alarm) {
    for (const auto& e : step->events) {
      if (e.raised) return AlarmExitCode(e.alarm.kind);
    }
  }
  return std::nullopt;
}

}  // namespace

const char* ServerEventName(ServerEvent::Kind kind) {
  switch (kind) {
    case ServerEvent::Kind::kStarted:
      return "server_started";
    case ServerEvent::Kind::kExited:
      return "server_exited";
    case ServerEvent::Kind::kRestarted:
      return "server_restarted";
    case ServerEvent::Kind::kApplied:
      return "applied";
    case ServerEvent::Kind::kGaveUp:
      return "gave_up";
    case ServerEvent::Kind::kStopped:
      return "server_stopped";
    case ServerEvent::Kind::kUnreachable:
      return "server_unreachable";
  }
  return "server_event";
}

int RunWatchLoop(Monitor& m, const LoopOptions& o, WatchSink& sink, const std::string& url) {
  const auto t0 = Clock::now();
  sink.OnStart(MakeStartInfo(m, url, o));
  for (const auto& e : m.Start()) {
    sink.OnAlarm(e);
    if (o.exit_on_alarm && e.raised) {
      sink.OnEnd(m.session().verdict(), Since(t0));
      return AlarmExitCode(e.alarm.kind);
    }
  }
  auto last_ok = Clock::now();
  ServerEvent unreachable;
  unreachable.kind = ServerEvent::Kind::kUnreachable;
  for (int k = 1;; ++k) {
    SleepUntil(t0 + o.interval * k);
    if (auto code = StepOnce(m, o, sink, &last_ok, &unreachable)) {
      sink.OnEnd(m.session().verdict(), Since(t0));
      return *code;
    }
    if (o.once || (o.duration && Clock::now() - t0 >= *o.duration)) break;
  }
  sink.OnEnd(m.session().verdict(), Since(t0));
  if (o.once) {
    // One sample: what is wrong now, not what the session saw earlier.
    int code = 0;
    for (const auto& a : m.session().ActiveAlarms()) {
      const int c = AlarmExitCode(a.kind);
      if (code == 0 || c < code) code = c;
    }
    return code;
  }
  return m.session().verdict().ExitCode();
}

namespace {

Result<std::unique_ptr<LiveSampler>> ConnectTo(const ServeOptions& o, pid_t pid) {
  SamplerOptions so;
  so.url.host = o.supervisor.host;
  so.url.port = o.supervisor.port;
  so.timeout = o.timeout;
  so.pid = pid;
  so.gpu_scan = o.gpu_scan;
  return LiveSampler::Connect(so);
}

ServerEvent Event(ServerEvent::Kind kind, const ServerSupervisor& sup, int port, double t) {
  ServerEvent e;
  e.kind = kind;
  e.time_s = t;
  e.pid = sup.pid();
  e.port = port;
  e.argv = sup.argv();
  e.startup_s = sup.startup_seconds();
  e.restarts = sup.restarts();
  return e;
}

ServerEvent ExitedEvent(const ServerSupervisor& sup, int port, double t, const SupervisorCheck& c) {
  ServerEvent e = Event(ServerEvent::Kind::kExited, sup, port, t);
  e.status = c.status.Describe();
  e.message = c.message;
  e.waited_s = c.waited_s;
  return e;
}

ServerEvent AppliedEvent(const ServerSupervisor& sup, int port, double t, const Alarm& a) {
  ServerEvent e = Event(ServerEvent::Kind::kApplied, sup, port, t);
  e.alarm = a;
  e.n_cpu_moe_from = a.n_cpu_moe_from;
  e.n_cpu_moe_to = a.n_cpu_moe_to;
  e.argv = a.command;
  e.message = fmt::format("restarting llama-server with --n-cpu-moe {} (was {}): {}",
                          *a.n_cpu_moe_to, a.n_cpu_moe_from.value_or(-1), a.title);
  return e;
}

// The overflow alarm whose fix --apply restarts the server with: one with a
// command, while nobody waits and applies are left; null when none.
const Alarm* FixToApply(const ServeOptions& o, const MonitorStep& step, int applies) {
  const LiveSample& s = step.sample;
  if (!o.apply || applies >= o.max_applies || s.slots_busy != 0 || s.requests_processing != 0 ||
      s.requests_deferred != 0)
    return nullptr;
  for (const auto& a : step.active) {
    if (a.kind == AlarmKind::kOverflow && !a.command.empty() && a.n_cpu_moe_to) return &a;
  }
  return nullptr;
}

// The monitor connected again to the (re)started server.
Status Reconnect(const ServeOptions& o, const ServerSupervisor& sup, Monitor* m) {
  MOETUNE_ASSIGN_OR_RETURN(auto sampler, ConnectTo(o, sup.pid()));
  m->Reconnect(std::move(sampler));
  return OkStatus();
}

// The server was started again: said, and the monitor connected to it.
Status Restarted(const ServeOptions& o, const ServerSupervisor& sup, double t, Monitor* m,
                 WatchSink& sink) {
  sink.OnServer(Event(ServerEvent::Kind::kRestarted, sup, o.supervisor.port, t));
  return Reconnect(o, sup, m);
}

}  // namespace

int RunServe(const ServeOptions& o, WatchSink& sink) {
  const auto t0 = Clock::now();
  ServerSupervisor sup(o.supervisor);
  const int port = o.supervisor.port;
  auto fail = [&](const std::string& why, const Verdict& v) {
    ServerEvent e = Event(ServerEvent::Kind::kGaveUp, sup, port, Since(t0));
    e.message = why;
    sink.OnServer(e);
    sink.OnEnd(v, Since(t0));
    return 1;
  };
  if (auto st = sup.Start(); !st.ok()) return fail(st.error().message(), {});
  sink.OnServer(Event(ServerEvent::Kind::kStarted, sup, port, Since(t0)));
  auto sampler = ConnectTo(o, sup.pid());
  if (!sampler.ok()) return fail(sampler.error().message(), {});
  Monitor m(std::move(sampler).value(), o.session);
  sink.OnStart(MakeStartInfo(m, m.sampler().client().url().ToString(), o.loop));
  for (const auto& e : m.Start()) sink.OnAlarm(e);
  auto last_ok = Clock::now();
  int applies = 0;
  ServerEvent unreachable = Event(ServerEvent::Kind::kUnreachable, sup, port, 0);
  auto next = t0;
  while (true) {
    next += o.loop.interval;
    SleepUntil(next);
    const SupervisorCheck c = sup.Poll();
    if (c.exited) sink.OnServer(ExitedEvent(sup, port, Since(t0), c));
    if (c.gave_up) {
      sup.Stop();
      return fail(c.error, m.session().verdict());
    }
    if (c.restarted) {
      if (auto st = Restarted(o, sup, Since(t0), &m, sink); !st.ok())
        return fail(st.error().message(), m.session().verdict());
      last_ok = Clock::now();
      continue;  // the counters restarted from zero: sample from the next interval
    }
    auto step = m.Step();
    if (!step.ok()) {
      unreachable.message = step.error().message();
      unreachable.time_s = Since(t0);
      sink.OnServer(unreachable);
      if (Clock::now() - last_ok >= o.loop.unreachable_limit) {
        // Alive but silent (a hang): restarted like a crash.
        const SupervisorCheck h = sup.RestartHung(
            fmt::format("no answer for {:.0f} s: {}", Since(last_ok), step.error().message()));
        sink.OnServer(ExitedEvent(sup, port, Since(t0), h));
        if (h.gave_up) return fail(h.error, m.session().verdict());
        if (auto st = Restarted(o, sup, Since(t0), &m, sink); !st.ok())
          return fail(st.error().message(), m.session().verdict());
        last_ok = Clock::now();
      }
      continue;
    }
    last_ok = Clock::now();
    sink.OnStep(*step);
    bool raised = false;
    for (const auto& e : step->events) raised = raised || e.raised;
    if (o.loop.exit_on_alarm && raised) break;
    // --apply: the fix, when the alarm is an overflow with a command and nobody waits.
    if (const Alarm* a = FixToApply(o, *step, applies)) {
      sink.OnServer(AppliedEvent(sup, port, Since(t0), *a));
      if (auto st = sup.Replace(a->command); !st.ok())
        return fail("restart with the fix failed: " + st.error().message(), m.session().verdict());
      sink.OnServer(Event(ServerEvent::Kind::kStarted, sup, port, Since(t0)));
      if (auto st = Reconnect(o, sup, &m); !st.ok())
        return fail(st.error().message(), m.session().verdict());
      m.session().Rebase(o.baseline_for ? o.baseline_for(*a->n_cpu_moe_to) : nullptr,
                         SettingsFromArgv(a->command));
      ++applies;
      last_ok = Clock::now();
    }
    if (o.loop.duration && Clock::now() - t0 >= *o.loop.duration) break;
  }
  ServerEvent e = Event(ServerEvent::Kind::kStopped, sup, port, Since(t0));
  e.status = sup.Stop().Describe();
  sink.OnServer(e);
  sink.OnEnd(m.session().verdict(), Since(t0));
  return m.session().verdict().ExitCode();
}

}  // namespace moetune
