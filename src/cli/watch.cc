// `moetune watch URL` (a running llama-server, sampled every few seconds) and
// `moetune watch --log FILE` (a past session from its log): prefill and decode
// against the baseline at the same depth, memory, page faults, GPU memory, and
// the alarms with their fix (docs/watch.md).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "cli/sampling_options.h"
#include "cli/validators.h"
#include "cli/watch_prediction.h"
#include "report/watch_report.h"
#include "util/utf8.h"
#include "watch/loop.h"
#include "watch/replay.h"
#include "watch/server_client.h"
#include "watch/setup.h"

namespace moetune {
namespace {

struct WatchOpts {
  std::string url;
  std::string log;
  std::string from;
  SamplingOptions sampling;  // --interval, --timeout, --duration
  int64_t pid = 0;
  std::string profile;
  bool no_predict = false;
  bool once = false;
  bool json = false;
  bool exit_on_alarm = false;
  bool no_gpu = false;
};

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

int RunLog(const WatchOpts& o, const std::optional<TunedFile>& tuned) {
  auto log = ReadServerLog(o.log);
  if (!log.ok()) return ReportError(log.error());
  SessionOptions so;
  std::vector<std::string> command;
  std::vector<std::string> notes;
  if (tuned && tuned->command_argv) {
    command = *tuned->command_argv;
  } else if (!log->commands.empty()) {
    // A log of `moetune serve` names the command it started (the first one:
    // what the session began with; restarts by --apply are not replayed).
    command = log->commands.front();
    if (std::any_of(log->commands.begin(), log->commands.end(),
                    [&](const auto& c) { return c != command; }))
      notes.push_back(
          "the server was restarted with other settings during this log; it is "
          "judged with the first command");
  }
  if (!command.empty()) so.expected = SettingsFromArgv(command);
  const std::optional<int> n = so.expected ? so.expected->NCpuMoe() : std::nullopt;
  // The speed model judges the command the log's server ran: the tuned
  // file's, else the one serve wrote into the log.
  std::optional<ServerPredictor> predictor;
  if (!command.empty() && !(tuned && (tuned->analysis || tuned->prediction))) {
    auto p = PredictorForServer(so.expected->config.model, o.profile, !o.no_predict, &notes);
    if (!p.ok()) return ReportError(p.error());
    predictor = std::move(p).value();
  }
  so.baseline = BaselineFor(tuned, n, command, predictor ? &*predictor : nullptr, &notes);
  if (so.expected) so.n_layer = ModelLayerCount(so.expected->config.model);
  log->notes.insert(log->notes.end(), notes.begin(), notes.end());
  const Replay replay = ReplayLog(*log, so);
  const std::string baseline = so.baseline
                                   ? so.baseline->Describe()
                                   : "the session's own first requests, extrapolated with depth";
  const std::string text = o.json ? LogReplayJsonLines(o.log, *log, replay, baseline)
                                  : LogReplayText(o.log, *log, replay, baseline);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return replay.verdict.ExitCode();
}

int RunLive(const WatchOpts& o, const std::optional<TunedFile>& tuned) {
  SamplerOptions so;
  so.url = *ParseServerUrl(o.url);  // validated
  so.timeout = Ms(o.sampling.timeout);
  if (o.pid > 0) so.pid = static_cast<pid_t>(o.pid);
  so.gpu_scan = MakeGpuScan(!o.no_gpu);
  auto sampler = LiveSampler::Connect(so);
  if (!sampler.ok()) return ReportError(sampler.error());
  SessionOptions session;
  std::vector<std::string> command;
  if (tuned && tuned->command_argv) {
    session.expected = SettingsFromArgv(*tuned->command_argv);
    command = *tuned->command_argv;
  }
  const auto running = (*sampler)->settings();
  if (command.empty() && running) {
    command = running->Command();
  }
  std::optional<int> n = running ? running->NCpuMoe() : std::nullopt;
  if (!n && session.expected) n = session.expected->NCpuMoe();
  std::vector<std::string> notes;
  std::optional<ServerPredictor> predictor;
  if (!command.empty() && !(tuned && (tuned->analysis || tuned->prediction))) {
    const std::string model = running && !running->config.model.empty()
                                  ? running->config.model
                                  : (*sampler)->props().model_path;
    auto p = PredictorForServer(model, o.profile, !o.no_predict, &notes);
    if (!p.ok()) return ReportError(p.error());
    predictor = std::move(p).value();
  }
  session.baseline = BaselineFor(tuned, n, command, predictor ? &*predictor : nullptr, &notes);
  session.n_layer = ModelLayerCount((*sampler)->props().model_path);
  Monitor monitor(std::move(sampler).value(), session);
  for (const auto& note : notes) std::cerr << ForTerminal("moetune watch: note: " + note + "\n");
  LoopOptions lo;
  lo.interval = Ms(o.sampling.interval);
  if (o.sampling.duration > 0) lo.duration = Ms(o.sampling.duration);
  lo.once = o.once;
  lo.exit_on_alarm = o.exit_on_alarm;
  lo.unreachable_limit = std::max(Ms(60), lo.interval * 10);
  std::unique_ptr<WatchSink> sink;
  if (o.json) {
    sink = std::make_unique<JsonLinesSink>(stdout);
  } else {
    sink = std::make_unique<TerminalSink>(stdout, !o.once && ::isatty(STDOUT_FILENO) == 1);
  }
  return RunWatchLoop(monitor, lo, *sink, monitor.sampler().client().url().ToString());
}

}  // namespace

void RegisterWatchCommand(CLI::App& app, CommandRun* run) {
  auto o = std::make_shared<WatchOpts>();
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "Watch a llama-server (or its log) for GPU overflow, page-cache thrashing, GPU "
      "memory taken by others and changed settings");
  auto* url =
      cmd->add_option("url", o->url, "The server, http://HOST:PORT (it must run with --metrics)")
          ->check(CLI::Validator(
              [](std::string& s) -> std::string {
                auto u = ParseServerUrl(s);
                return u.ok() ? "" : u.error().message();
              },
              "URL"));
  auto* log =
      cmd->add_option("--log", o->log, "Judge a past session from a llama-server log file instead");
  url->excludes(log);
  cmd->add_option("--from", o->from,
                  "Tuned configuration: JSON of moetune tune/plan (command_argv) or analyze "
                  "(curves) for the expected settings and the baseline");
  AddSamplingOptions(cmd, &o->sampling);
  cmd->add_option("--pid", o->pid,
                  "The server's process id (default: found by its port for a local server)")
      ->check(IntRange(1, 4194304));
  cmd->add_option("--profile", o->profile,
                  "Machine profile for the speed model's predicted baseline (default: the one "
                  "moetune doctor wrote)");
  cmd->add_flag("--no-predict", o->no_predict,
                "No predicted baseline: without --from, learn it from the session's first "
                "requests");
  cmd->add_flag("--once", o->once, "Print one sample (over one --interval) and exit");
  cmd->add_flag("--json", o->json, "JSON lines (one event per line; fields in docs/cli.md)");
  cmd->add_flag("--exit-on-alarm", o->exit_on_alarm,
                "Exit at the first alarm with its exit code (3 overflow, 4 page faults, 5 GPU "
                "memory taken, 6 settings changed)");
  cmd->add_flag("--no-gpu", o->no_gpu, "Do not read GPU memory through NVML");
  cmd->callback([o, run, cmd] {
    *run = [o, cmd]() -> int {
      if (o->url.empty() && o->log.empty()) {
        std::cerr << "moetune watch: give the server's URL (http://HOST:PORT) or --log FILE\n"
                  << cmd->help();
        return kExitUsage;
      }
      std::optional<TunedFile> tuned;
      if (!o->from.empty()) {
        auto t = LoadTunedFile(o->from);
        if (!t.ok()) return ReportError(t.error());
        tuned = std::move(t).value();
      }
      return o->log.empty() ? RunLive(*o, tuned) : RunLog(*o, tuned);
    };
  });
}

}  // namespace moetune
