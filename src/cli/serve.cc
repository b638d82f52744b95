// `moetune serve MODEL`: runs llama-server with the tuned (--from) or planned
// configuration and --metrics, keeps it up (restarts with backoff), and
// watches it like `moetune watch`; with --apply, restarts it with the fix
// when an overflow alarm fires and no slot is busy (docs/watch.md).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/machine_flags.h"
#include "cli/model_argument.h"
#include "cli/sampling_options.h"
#include "cli/validators.h"
#include "cli/watch_prediction.h"
#include "engine/engine_info.h"
#include "engine/rpc_host.h"
#include "hw/cpu_topology.h"
#include "report/watch_report.h"
#include "util/units.h"
#include "util/utf8.h"
#include "watch/loop.h"
#include "watch/serve_command.h"
#include "watch/setup.h"

namespace moetune {
namespace {

struct ServeOpts {
  std::string model;
  std::string from;
  std::string ctx = "4096";
  GpuBudgetOptions gpu;  // --vram, --vram-used, --reserve
  std::string profile;
  std::string margin = "1024MiB";
  std::string ctk = "f16";
  std::string ctv = "f16";
  int64_t ubatch = 512;
  int64_t batch = 2048;
  int64_t parallel = 1;
  std::string fa = "on";
  std::string rpc;  // --rpc HOST:PORT[,...]
  int64_t threads = 0;
  std::string host = "127.0.0.1";
  int64_t port = 8080;
  bool apply = false;
  bool no_predict = false;
  SamplingOptions sampling;  // --interval, --timeout, --duration
  int64_t max_restarts = 5;
  double health_timeout = 600;
  std::string server_log;
  std::string llama_dir;
  bool json = false;
  bool exit_on_alarm = false;
  bool no_gpu = false;
  bool force = false;
};

// Whether the engine lists a GPU device (nullopt when it cannot be asked):
// without --vram, an engine with none is planned host-only.
std::optional<bool> EngineHasGpu(const std::string& llama_dir) {
  DiscoveryOptions d;
  d.llama_dir = llama_dir;
  auto engine = DiscoverEngine(d);
  if (!engine.ok()) return std::nullopt;
  return !engine->devices.empty();
}

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The configuration serve plans when --from carries no command.
Result<ServerConfig> PlannedBase(const ServeOpts& o, std::vector<std::string>* notes) {
  ServePlanOptions p;
  p.n_ctx = *ParseTokenCount(o.ctx);  // validated
  MachineFlags gpu;
  gpu.gpu = o.gpu;
  gpu.profile = o.profile;
  if (!o.rpc.empty() || SeveralDevices(o.gpu)) {
    MOETUNE_ASSIGN_OR_RETURN(p.devices, DeviceBudgetsFromFlags(o.gpu, o.rpc));
    if (!o.rpc.empty()) {
      MOETUNE_TRY(RpcServersOnly(p.devices, "serve"));
      p.rpc = *ParseRpcList(o.rpc);  // checked by DeviceBudgetsFromFlags
    }
  } else {
    const std::optional<bool> engine_gpu =
        o.gpu.vram.empty() ? EngineHasGpu(o.llama_dir) : std::nullopt;
    MOETUNE_ASSIGN_OR_RETURN(p.gpu, ResolveCommandGpuBudget(gpu, engine_gpu));
  }
  p.margin = ParseBytes(o.margin)->count();
  p.type_k = o.ctk;
  p.type_v = o.ctv;
  p.n_ubatch = static_cast<int>(o.ubatch);
  p.n_batch = static_cast<int>(o.batch);
  p.n_parallel = static_cast<int>(o.parallel);
  p.flash_attn = o.fa == "on";
  return PlannedServerConfig(o.model, p, notes);
}

// The supervisor's, the loop's and the session's options for `argv`.
ServeOptions LoopOptions(const ServeOpts& o, const std::vector<std::string>& argv, int port) {
  ServeOptions so;
  so.supervisor.argv = argv;
  // A wildcard bind address is reached through loopback.
  so.supervisor.host = o.host == "0.0.0.0" ? "127.0.0.1" : (o.host == "::" ? "::1" : o.host);
  so.supervisor.port = port;
  so.supervisor.log_file = !o.server_log.empty()
                               ? o.server_log
                               : (std::filesystem::temp_directory_path() /
                                  fmt::format("moetune-serve-{}-{}.log", port, ::getpid()))
                                     .string();
  so.supervisor.health_timeout = Ms(o.health_timeout);
  so.supervisor.max_restarts = static_cast<int>(o.max_restarts);
  so.loop.interval = Ms(o.sampling.interval);
  if (o.sampling.duration > 0) so.loop.duration = Ms(o.sampling.duration);
  so.loop.exit_on_alarm = o.exit_on_alarm;
  so.loop.unreachable_limit = std::max(Ms(60), so.loop.interval * 10);
  so.timeout = Ms(o.sampling.timeout);
  so.apply = o.apply;
  so.gpu_scan = MakeGpuScan(!o.no_gpu);
  so.session.expected = SettingsFromArgv(argv);
  so.session.n_layer = ModelLayerCount(o.model);
  return so;
}

// A tune made elsewhere (the simulated engine, another machine or llama.cpp)
// is not served without --force: its pick was never measured here.
Status CheckTunedHere(const TunedFile& tuned, const std::string& engine_version, bool force) {
  const auto foreign = ForeignTuneChecks(
      *tuned.origin, CpuFingerprint(ReadCpuTopology(SysRoot("/"))), engine_version);
  if (foreign.empty()) return OkStatus();
  std::string why;
  for (const auto& f : foreign) why += (why.empty() ? "" : "; ") + f.Describe();
  if (force) {
    std::cerr << ForTerminal(
        fmt::format("moetune serve: warning: {} was not tuned here: {}; "
                    "served anyway (--force)\n",
                    tuned.path, why));
    return OkStatus();
  }
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("{} was not tuned here: {}. Tune on this machine (moetune tune), or "
                           "pass --force to serve it anyway",
                           tuned.path, why));
}

// The engine whose llama-server serve starts; a --from tune must have been made with it.
Result<EngineInfo> ServeEngine(const ServeOpts& o, const std::optional<TunedFile>& tuned) {
  DiscoveryOptions d;
  d.llama_dir = o.llama_dir;
  d.probe = tuned && tuned->origin;  // the version, to compare with the tune's
  MOETUNE_ASSIGN_OR_RETURN(EngineInfo engine, DiscoverEngine(d));
  if (!engine.HasTool("llama-server")) {
    return Error(ErrorKind::kNotFound, "no executable llama-server in " + engine.dir +
                                           "; install the engine (scripts/setup-engine.sh) or "
                                           "pass --llama-dir");
  }
  if (tuned && tuned->origin) MOETUNE_TRY(CheckTunedHere(*tuned, engine.version_line, o.force));
  return engine;
}

int Run(const ServeOpts& o, const std::vector<CLI::Option*>& plan_opts) {
  std::optional<TunedFile> tuned;
  std::vector<std::string> notes;
  if (!o.from.empty()) {
    auto t = LoadTunedFile(o.from);
    if (!t.ok()) return ReportError(t.error());
    tuned = std::move(t).value();
  }
  ServerConfig base;
  if (tuned && tuned->command_argv) {
    for (auto* opt : plan_opts) {
      if (opt->count() > 0) {
        std::cerr << ForTerminal("moetune serve: error: " + opt->get_name() +
                                 " cannot be used with --from " + o.from +
                                 ", which carries the whole command (command_argv)\n");
        return kExitUsage;
      }
    }
    std::vector<std::string> dropped;
    base = ConfigFromCommand(*tuned->command_argv, &dropped);
    if (!dropped.empty()) {
      notes.push_back(fmt::format(
          "{}: not started with {} (serve starts only the settings moetune plans and tunes)",
          o.from, ShellJoin(dropped)));
    }
  } else {
    auto planned = PlannedBase(o, &notes);
    if (!planned.ok()) return ReportError(planned.error());
    base = std::move(planned).value();
  }
  auto engine = ServeEngine(o, tuned);
  if (!engine.ok()) return ReportError(engine.error());
  // A host that does not answer is named now, not after llama-server waited on it.
  if (auto st = CheckRpcHosts(base.rpc); !st.ok()) return ReportError(st.error());
  ServeCommandOptions c;
  c.server_path = engine->ToolPath("llama-server");
  c.model = o.model;
  c.host = o.host;
  c.port = static_cast<int>(o.port);
  if (o.threads > 0) c.threads = static_cast<int>(o.threads);
  const std::vector<std::string> argv = ServeArgv(base, c);

  ServeOptions so = LoopOptions(o, argv, c.port);
  so.supervisor.rpc_hosts = base.rpc;
  std::shared_ptr<const ServerPredictor> predictor;
  if (!(tuned && (tuned->analysis || tuned->prediction))) {
    auto p = PredictorForServer(o.model, o.profile, !o.no_predict, &notes);
    if (!p.ok()) return ReportError(p.error());
    if (*p) predictor = std::make_shared<const ServerPredictor>(std::move(**p));
  }
  so.session.baseline =
      BaselineFor(tuned, so.session.expected->NCpuMoe(), argv, predictor.get(), &notes);
  // After --apply: the measured curves at the new N or a more conservative
  // one; never a less conservative N's (it would expect too much and apply
  // again); the prediction for the new N; else the session's own requests.
  so.baseline_for = [tuned, argv, predictor](int n) -> std::shared_ptr<const Baseline> {
    auto b = BaselineFor(tuned, n, argv, predictor.get(), nullptr);
    const auto* curve = dynamic_cast<const CurveBaseline*>(b.get());
    if (curve != nullptr && curve->n_cpu_moe < n) return nullptr;
    return b;
  };
  for (const auto& n : notes) std::cerr << ForTerminal("moetune serve: note: " + n + "\n");
  std::cerr << ForTerminal("moetune serve: llama-server log: " + so.supervisor.log_file +
                           " (moetune watch --log reads it later)\n");
  std::unique_ptr<WatchSink> sink;
  if (o.json) {
    sink = std::make_unique<JsonLinesSink>(stdout);
  } else {
    sink = std::make_unique<TerminalSink>(stdout, ::isatty(STDOUT_FILENO) == 1);
  }
  return RunServe(so, *sink);
}

// The options of the plan serve makes when --from carries no command.
std::vector<CLI::Option*> AddPlanOptions(CLI::App* cmd, ServeOpts* o) {
  std::vector<CLI::Option*> plan_opts;
  plan_opts.push_back(cmd->add_option("--ctx,-c", o->ctx, "Context length (e.g. 32768 or 32K)")
                          ->check(TokenCount(256, int64_t{1} << 24))
                          ->capture_default_str());
  for (CLI::Option* g : AddGpuBudgetFlags(cmd, &o->gpu, /*device_lists=*/true))
    plan_opts.push_back(g);
  plan_opts.push_back(cmd->add_option("--rpc", o->rpc,
                                      "Serve across the devices of these RPC servers "
                                      "(HOST:PORT[,...], ggml-rpc-server), with --vram giving "
                                      "one size per server")
                          ->check(RpcServerList()));
  plan_opts.push_back(cmd->add_option("--margin", o->margin, "Safety margin kept free on the GPU")
                          ->check(ByteSize(0, int64_t{1} << 40))
                          ->capture_default_str());
  plan_opts.push_back(cmd->add_option("--ctk", o->ctk, "KV cache type for K")
                          ->check(KvCacheType())
                          ->capture_default_str());
  plan_opts.push_back(cmd->add_option("--ctv", o->ctv, "KV cache type for V")
                          ->check(KvCacheType())
                          ->capture_default_str());
  plan_opts.push_back(cmd->add_option("--ubatch,--ub", o->ubatch, "Micro-batch size (-ub)")
                          ->check(IntRange(1, 65536))
                          ->capture_default_str());
  plan_opts.push_back(cmd->add_option("--batch,-b", o->batch, "Logical batch size (-b)")
                          ->check(IntRange(1, 1 << 20))
                          ->capture_default_str());
  plan_opts.push_back(cmd->add_option("--parallel,--np", o->parallel, "Server slots (-np)")
                          ->check(IntRange(1, 256))
                          ->capture_default_str());
  plan_opts.push_back(cmd->add_option("--fa", o->fa, "Flash attention: on or off")
                          ->check(CLI::IsMember({"on", "off"}))
                          ->capture_default_str());
  for (auto* p : plan_opts) p->group("Plan (when --from has no command)");
  return plan_opts;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, CommandRun* run) {
  auto o = std::make_shared<ServeOpts>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run llama-server with the tuned or planned configuration, keep it up, and "
      "watch it (moetune watch); --apply restarts it with the fix on overflow");
  cmd->add_option("model", o->model, "GGUF model file")->required()->check(ExistingModel());
  cmd->add_option(
      "--from", o->from,
      "JSON of moetune tune/plan (its command_argv is served) or analyze (curves: the baseline)");
  const std::vector<CLI::Option*> plan_opts = AddPlanOptions(cmd, o.get());
  cmd->add_option("--profile", o->profile,
                  "Machine profile: free VRAM for the plan, and the machine of the speed model's "
                  "predicted baseline (default: the one moetune doctor wrote)");
  cmd->add_flag("--no-predict", o->no_predict,
                "No predicted baseline: without --from curves, learn it from the session's first "
                "requests");
  cmd->add_option("--threads,-t", o->threads, "CPU threads for llama-server (-t)")
      ->check(IntRange(1, 4096));
  cmd->add_option("--host", o->host, "Address llama-server listens on")
      ->check(CLI::Validator(
          [](std::string& s) -> std::string {
            if (s.empty() || s.size() > 255 || s.find_first_of(" \t/") != std::string::npos)
              return "'" + s + "' is not a host name or address (e.g. 127.0.0.1)";
            return "";
          },
          "HOST"))
      ->capture_default_str();
  cmd->add_option("--port", o->port, "Port llama-server listens on")
      ->check(IntRange(1, 65535))
      ->capture_default_str();
  cmd->add_flag("--apply", o->apply,
                "On an overflow alarm, restart the server with the fix when no slot is busy");
  AddSamplingOptions(cmd, &o->sampling);
  cmd->add_option("--max-restarts", o->max_restarts,
                  "Restarts after crashes before giving up (backoff 1 s, 2 s, 4 s ... 60 s)")
      ->check(IntRange(0, 1000))
      ->capture_default_str();
  cmd->add_option("--health-timeout", o->health_timeout,
                  "Seconds llama-server may take to load the model and answer /health")
      ->check(Seconds(1, 86400))
      ->capture_default_str();
  cmd->add_option("--server-log", o->server_log,
                  "Append llama-server's output here (default: a file in the temp folder)");
  cmd->add_option("--llama-dir", o->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  cmd->add_flag("--json", o->json, "JSON lines (one event per line; fields in docs/cli.md)");
  cmd->add_flag("--exit-on-alarm", o->exit_on_alarm,
                "Stop the server and exit at the first alarm, with its exit code");
  cmd->add_flag("--no-gpu", o->no_gpu, "Do not read GPU memory through NVML");
  cmd->add_flag("--force", o->force,
                "Serve a --from tune made elsewhere (simulated engine, another machine or "
                "llama.cpp) anyway");
  cmd->callback([o, run, plan_opts] {
    *run = WithModel(&o->model, [o, plan_opts]() { return Run(*o, plan_opts); });
  });
}

}  // namespace moetune
