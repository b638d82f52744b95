// `moetune doctor [--model M --ctx C] [--json]`: the true picture of the
// machine (GPUs and who holds their memory, CPU topology and usable threads,
// RAM and its bandwidth, engine traps), verdicts with fixes, and the saved
// machine profile that `plan` reads for --vram.
#include "doctor/doctor.h"

#include <fmt/format.h>

#include <iostream>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "cli/validators.h"
#include "engine/decode_reference.h"
#include "engine/engine_info.h"
#include "model/model_info.h"
#include "plan/placement.h"
#include "report/doctor_report.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {
namespace {

// Fills ModelNeeds from the memory map through the planner's own device model
// (plan/placement.h), so that doctor and plan agree on what must sit in VRAM.
Result<ModelNeeds> ModelNeedsFor(const ModelInfo& info, const std::string& path, int64_t n_ctx) {
  if (!info.arch.is_moe()) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("'{}' is not a Mixture-of-Experts model; doctor's expert-layer advice "
                             "needs one (run doctor without --model)",
                             path));
  }
  PlanRequest req;
  req.vram_free = int64_t{1} << 60;  // only the per-N breakdowns are used
  req.ctx.n_ctx = n_ctx;
  req.fine_fill = false;
  MOETUNE_ASSIGN_OR_RETURN(const Plan plan, PlanPlacement(info.gguf, info.arch, info.weights, req));
  ModelNeeds m;
  m.name =
      path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  m.n_ctx = n_ctx;
  for (const auto& layer : info.weights.layers) m.expert_bytes_by_layer.push_back(layer.experts());
  const PlacementOption* all_cpu = nullptr;
  const PlacementOption* all_gpu = nullptr;
  for (const auto& o : plan.options) {
    if (o.n_cpu_moe == plan.n_layer) all_cpu = &o;
    if (o.n_cpu_moe == 0) all_gpu = &o;
  }
  if (all_cpu == nullptr || all_gpu == nullptr) {
    return Error(ErrorKind::kInternal,
                 fmt::format("the planner gave no --n-cpu-moe 0..{} breakdown for '{}'",
                             plan.n_layer, path));
  }
  m.gpu_fixed_bytes = all_cpu->gpu.total();
  m.host_fixed_bytes = all_gpu->host.total();
  return m;
}

// The decode reference for the measured bandwidth: a short CPU-only decode of
// the model, when the model fits comfortably in RAM (a CPU-only load of a
// model that does not would thrash the page cache for minutes).
void AddDecodeReference(const EngineInfo& engine, const std::string& path, const ModelInfo& info,
                        DoctorReport* report) {
  const MachineProfile& p = report->profile;
  if (!p.bandwidth) return;
  if (p.memory.available_bytes > 0 && info.weights.total > p.memory.available_bytes / 2) {
    report->reference_notes.push_back(fmt::format(
        "CPU decode reference skipped: the model ({}) is more than half of the available RAM ({})",
        FormatBytes(Bytes(info.weights.total)), FormatBytes(Bytes(p.memory.available_bytes))));
    return;
  }
  DecodeCheckOptions o;
  o.threads = p.bandwidth->threads;
  auto d = MeasureDecodeBandwidth(engine, path, info.weights.bytes_per_token, info.weights.total,
                                  p.cpu.llc_bytes, o);
  if (d.ok()) {
    report->decode = *d;
  } else {
    report->reference_notes.push_back("CPU decode reference not measured: " + d.error().message());
  }
}

struct DoctorOpts {
  std::string model;
  std::string ctx = "4096";
  bool json = false;
  std::string profile;
  bool no_save = false;
  bool no_bandwidth = false;
  bool no_engine = false;
  bool no_decode = false;
  std::string llama_dir;
  std::string sysroot = "/";
  std::string nvml = "libnvidia-ml.so.1";
};

// `moetune doctor` with its options parsed.
int RunDoctorCommand(const DoctorOpts& o) {
  std::optional<int64_t> ctx;
  if (!o.model.empty()) ctx = *ParseTokenCount(o.ctx);  // validated
  DoctorOptions d;
  d.root = SysRoot(o.sysroot);
  d.nvml_library = o.nvml;
  d.measure_bandwidth = !o.no_bandwidth;
  d.env = CurrentEnvironment();
  d.engine_dir = o.llama_dir;
  if (!o.json) std::cerr << "moetune: examining this machine (about 2 s)...\n";
  // The one engine discovery every command uses: a bad --llama-dir or
  // MOETUNE_LLAMA_DIR is the same error here as in bench and engine (the
  // report is still printed, with the reason as its first verdict).
  std::optional<Error> engine_error;
  std::optional<EngineInfo> engine;
  if (!o.no_engine) {
    DiscoveryOptions dopt;
    dopt.llama_dir = o.llama_dir;
    dopt.system_root = o.sysroot;
    auto info = DiscoverEngine(dopt);
    if (info.ok()) {
      d.engine = EngineProbeFromInfo(*info);
      engine = std::move(info).value();
    } else {
      engine_error = info.error();
      d.engine = EngineProbeFromError(info.error());
    }
  }
  std::optional<ModelInfo> model;
  if (ctx) {
    auto m = LoadModelInfo(o.model);
    if (!m.ok()) return ReportError(m.error());
    model = std::move(m).value();
  }
  DoctorReport report = RunDoctor(d);
  if (model) {
    auto needs = ModelNeedsFor(*model, o.model, *ctx);
    if (!needs.ok()) return ReportError(needs.error());
    AddModelToReport(*needs, &report);
    if (engine && !o.no_decode) AddDecodeReference(*engine, o.model, *model, &report);
  }
  // Names from drivers, /proc and the model file may be any bytes.
  const std::string text =
      o.json ? JsonOutput(DoctorReportToJson(report)) : FormatDoctorText(report);
  if (auto st = WriteOutput("-", text); !st.ok()) return ReportError(st.error());
  if (!o.no_save) {
    const std::string path = o.profile.empty() ? DefaultMachineProfilePath() : o.profile;
    if (auto st = SaveMachineProfile(report.profile, path); !st.ok()) {
      // A profile the user asked for is worth an exit code; the default
      // location being unusable (no HOME, read-only home) is only a warning.
      if (!o.profile.empty()) return ReportError(st.error());
      std::cerr << ForTerminal(
          fmt::format("moetune: warning: machine profile not saved: {}\n", st.error().message()));
    } else {
      std::cerr << ForTerminal(fmt::format("moetune: machine profile saved to {}\n", path));
    }
  }
  if (engine_error) return ReportError(*engine_error);
  return kExitOk;
}

}  // namespace

void RegisterDoctorCommand(CLI::App& app, CommandRun* run) {
  auto o = std::make_shared<DoctorOpts>();
  CLI::App* cmd = app.add_subcommand(
      "doctor",
      "Show the true picture of this machine (GPUs, VRAM holders, CPU threads, RAM bandwidth, "
      "engine traps) and save the machine profile");
  auto* model_opt = cmd->add_option("--model", o->model,
                                    "GGUF MoE model: make the verdicts concrete (expert layers)");
  cmd->add_option("--ctx", o->ctx, "Context length for --model (e.g. 32K)")
      ->check(TokenCount(1, kMaxContext))
      ->needs(model_opt)
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON on stdout (fields in docs/cli.md)");
  cmd->add_option("--profile", o->profile,
                  "Where to save the machine profile (default $MOETUNE_PROFILE, "
                  "$XDG_CONFIG_HOME/moetune/machine.json or ~/.config/moetune/machine.json)");
  cmd->add_flag("--no-save", o->no_save, "Do not save the machine profile");
  cmd->add_flag("--no-bandwidth", o->no_bandwidth, "Skip the RAM bandwidth measurement (~1-2 s)");
  cmd->add_flag("--no-engine", o->no_engine, "Do not look for or probe the llama.cpp engine");
  cmd->add_flag("--no-decode", o->no_decode,
                "With --model: skip the short decode run that measures the engine's bandwidth");
  cmd->add_option(
      "--llama-dir", o->llama_dir,
      "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, the default engine, PATH)");
  cmd->add_option("--sysroot", o->sysroot, "Read /sys and /proc under this folder (for tests)")
      ->group("");
  cmd->add_option("--nvml-library", o->nvml, "NVML library to load (for tests)")->group("");
  cmd->callback(
      [o, run] { *run = WithModel(&o->model, [o]() -> int { return RunDoctorCommand(*o); }); });
}

}  // namespace moetune
