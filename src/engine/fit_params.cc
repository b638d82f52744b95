#include "engine/fit_params.h"

#include <fmt/format.h>

#include <chrono>

#include "config/server_argv.h"
#include "engine/engine_output.h"
#include "engine/rpc_host.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace moetune {

const FitParamsDevice* FitParamsReport::Find(std::string_view name) const {
  for (const auto& d : devices) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

Result<std::vector<FitParamsDevice>> ParseFitParamsOutput(std::string_view text) {
  // "Host 13 32 12" / "CUDA0 20480 1024 512": a name then three MiB numbers
  // (integers in current versions; decimals accepted), nothing else. Scanned
  // word by word with range-checked numbers (engine_output.h).
  std::vector<FitParamsDevice> out;
  for (const std::string_view line : SplitLines(text)) {
    std::string_view rest = line;
    const std::string_view name = NextWord(&rest);
    const std::string_view model = NextWord(&rest);
    const std::string_view context = NextWord(&rest);
    const std::string_view compute = NextWord(&rest);
    if (compute.empty() || !Trim(rest).empty()) continue;
    const auto m = ParseMiB(model);
    const auto c = ParseMiB(context);
    const auto k = ParseMiB(compute);
    if (!m || !c || !k) continue;
    out.push_back({std::string(name), *m, *c, *k});
  }
  if (out.empty()) {
    return Error(
        ErrorKind::kFormat,
        fmt::format(
            "llama-fit-params printed no '<device> <model> <context> <compute>' line (got '{}'); "
            "this engine may not support -fitp",
            text.substr(0, 200)));
  }
  return out;
}

namespace {

// The RPC servers of the dry run: the options' list, else the configuration's.
std::vector<std::string> DryRunRpcHosts(const ServerConfig& config,
                                        const FitParamsOptions& options) {
  if (options.rpc.empty()) return config.rpc;
  // A malformed entry is passed on as written: the host check names it.
  auto hosts = ParseRpcList(options.rpc);
  return hosts.ok() ? *hosts : std::vector<std::string>{options.rpc};
}

}  // namespace

std::vector<std::string> FitParamsArgv(const EngineInfo& engine, const ServerConfig& config,
                                       const FitParamsOptions& options) {
  ServerConfig c = config;
  // Explicit placement, no fitting: the sizes are those of exactly this placement.
  c.fit = Switch::kOff;
  c.rpc = DryRunRpcHosts(config, options);
  if (options.count_host_weights) c.load_mode = LoadMode::kNone;
  std::vector<std::string> argv = ServerArgv(c, engine.ToolPath("llama-fit-params"));
  if (options.count_host_weights) argv.emplace_back(Flag(FlagId::kNoRepack).spelling);
  argv.insert(argv.end(), {Flag(FlagId::kFitPrint).spelling, "on"});
  return argv;
}

Result<FitParamsReport> RunFitParams(const EngineInfo& engine, const ServerConfig& config,
                                     const FitParamsOptions& options) {
  if (!engine.HasTool("llama-fit-params")) {
    return Error(
        ErrorKind::kNotFound,
        fmt::format(
            "the engine in {} has no llama-fit-params (Debian: llama.cpp-tools-extra; upstream: "
            "build target llama-fit-params)",
            engine.dir));
  }
  // A host that does not answer is named before the dry run waits on it.
  const std::vector<std::string> hosts = DryRunRpcHosts(config, options);
  MOETUNE_TRY(CheckRpcHosts(hosts));
  FitParamsReport report;
  report.argv = FitParamsArgv(engine, config, options);
  // Flags this build lacks are named before it runs (versions differ: -kvu is
  // a llama-server flag only, -fitp is new in 2026 builds).
  MOETUNE_TRY(CheckEngineFlags(engine, EngineTool::kFitParams, report.argv,
                               "the memory dry run (llama-fit-params)"));
  RunOptions o;
  o.spawn.argv = report.argv;
  o.timeout = std::chrono::milliseconds(120000);
  LogTail log(30, IsNoiseLine, IsDiagnosticLine, 100);
  o.stderr_tail_lines = 0;
  o.on_stderr_line = [&](std::string_view l) { log.Add(l); };
  MOETUNE_ASSIGN_OR_RETURN(RunOutput out, RunProcess(o));
  report.wall_seconds = out.wall_seconds;
  auto devices = ParseFitParamsOutput(out.stdout_text);
  if (out.status.success() && !out.timed_out && devices.ok()) {
    report.devices = std::move(devices).value();
    return report;
  }
  // "error: invalid argument: -kvu": a flag this tool does not take.
  for (const auto& line : log.kept()) {
    const std::string_view key = "invalid argument: ";
    if (const size_t at = line.find(key); at != std::string::npos) {
      const std::string flag = line.substr(at + key.size());
      return Error(ErrorKind::kUnsupported,
                   fmt::format("this engine's llama-fit-params does not take {} ({}), so its dry "
                               "run cannot check a configuration that needs it",
                               flag, line));
    }
  }
  EngineFailure f = ClassifyFailure(out.status, out.timed_out, 120, log.kept(), log.tail());
  AttributeRpcFailure(hosts, &f);
  if (f.kind == FailureKind::kUnparseable && !devices.ok()) return devices.take_error();
  return Error(ErrorKind::kEngine, fmt::format("llama-fit-params failed ({}, {}): {}",
                                               FailureKindName(f.kind), f.exit, f.message));
}

}  // namespace moetune
