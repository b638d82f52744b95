// `moetune plan MODEL --ctx N --vram SIZE ...`: the smallest --n-cpu-moe that
// fits this GPU with a safety margin, the breakdown per device, a table over
// every N, host RAM, and the exact llama-server command.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "cli/plan_predict.h"
#include "cli/report_output.h"
#include "cli/validators.h"
#include "engine/engine_info.h"
#include "engine/fit_params.h"
#include "engine/rpc_host.h"
#include "hw/machine_profile.h"
#include "hw/system_memory.h"
#include "model/context_support.h"
#include "model/model_info.h"
#include "plan/check.h"
#include "plan/placement.h"
#include "report/check_report.h"
#include "report/command_documents.h"
#include "report/emit.h"
#include "report/model_report.h"
#include "report/prediction_report.h"
#include "report/report_blocks.h"
#include "util/text.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {

namespace {

struct PlanOpts {
  std::string model;
  std::string ctx = "4096";
  std::string profile;
  std::string margin = "1024MiB";
  std::string host_ram;
  std::string ctk = "f16";
  std::string ctv = "f16";
  int ubatch = 512;
  int batch = 2048;
  int parallel = 1;
  bool kvu = false;
  std::string fa = "on";
  std::string rpc;
  bool no_fine_fill = false;
  bool json = false;
  bool check = false;
  std::string llama_dir;
  std::string output;
  std::string report;
  std::string emit;
  bool predict = false;
  int threads = 0;
  MachineFlags machine;
};

Result<PlanRequest> BuildRequest(const PlanOpts& o) {
  PlanRequest r;
  MOETUNE_ASSIGN_OR_RETURN(r.ctx.n_ctx, ParseTokenCount(o.ctx));
  // The GPU memory model first (flags, the what-if machine or the doctor's
  // profile), printed before anything is planned.
  if (SeveralDevices(o.machine.gpu)) {
    MOETUNE_ASSIGN_OR_RETURN(const std::vector<DeviceBudget> devices,
                             DeviceBudgetsFromFlags(o.machine.gpu, o.rpc));
    r.SetDevices(devices);
  } else {
    MOETUNE_ASSIGN_OR_RETURN(const GpuMemoryBudget gpu,
                             ResolveCommandGpuBudget(o.machine, std::nullopt));
    PrintGpuBudget(gpu);
    r.vram_free = gpu.free();
    r.reserve = gpu.reserve;
  }
  MOETUNE_ASSIGN_OR_RETURN(Bytes margin, ParseBytes(o.margin));
  r.margin = margin.count();
  if (!o.host_ram.empty()) {
    MOETUNE_ASSIGN_OR_RETURN(Bytes h, ParseBytes(o.host_ram));
    r.host_ram_available = h.count();
  } else {
    r.host_ram_available = ReadSystemMemory(SysRoot("/")).available_bytes;
  }
  // Every value below was checked by its option's validator.
  r.ctx.type_k = *ParseKvCacheType(o.ctk);
  r.ctx.type_v = *ParseKvCacheType(o.ctv);
  // The flags as given; llama.cpp clamps the micro-batch to the batch and the
  // batch to the context itself (LayoutContext mirrors it).
  r.ctx.n_ubatch = o.ubatch;
  r.ctx.n_batch = o.batch;
  r.ctx.n_seq = o.parallel;
  r.ctx.kv_unified = o.kvu;
  r.ctx.flash_attn = o.fa == "on";
  r.fine_fill = !o.no_fine_fill;
  return r;
}

// The configuration the check runs: the printed command's, or, when nothing
// fits, the least demanding one (every expert, or every layer, on the CPU).
ServerConfig CheckedConfig(const Plan& plan, const PlanRequest& req) {
  if (plan.config) return *plan.config;
  const PlacementOption& o = plan.moe ? plan.options.back() : plan.options.front();
  return PlannedConfig(req.model_path, o.placement, req.ctx, plan.moe);
}

// Runs llama-fit-params with the planned command's own configuration (one
// writer: ServerArgv) and compares its per-device sizes.
Result<PlanCheck> CheckWithEngine(const ModelInfo& m, const Plan& plan, const PlanRequest& req,
                                  const PlanOpts& o) {
  DiscoveryOptions d;
  d.llama_dir = o.llama_dir;
  MOETUNE_ASSIGN_OR_RETURN(EngineInfo engine, DiscoverEngine(d));
  const ServerConfig launch = CheckedConfig(plan, req);
  FitParamsOptions fo;
  fo.count_host_weights = true;
  fo.rpc = o.rpc;
  auto report = RunFitParams(engine, launch, fo);
  if (!report.ok()) {
    Error e = report.take_error();
    if (e.kind() == ErrorKind::kUnsupported && launch.kv_unified == Switch::kOn)
      return Error(ErrorKind::kUnsupported,
                   e.message() +
                       "; llama-fit-params has no unified-cache option in this engine, "
                       "so plan --check cannot verify --kvu with --parallel > 1 (check "
                       "the per-slot layout without --kvu, or --parallel 1)")
          .Context("plan --check");
    return e.Context("plan --check");
  }
  std::vector<EngineDeviceSizes> devices;
  for (const auto& dev : report->devices)
    devices.push_back(
        {dev.name, dev.model_bytes.count(), dev.context_bytes.count(), dev.compute_bytes.count()});
  MOETUNE_ASSIGN_OR_RETURN(PlanCheck c,
                           ComparePlanWithEngine(m.gguf, m.arch, m.weights, launch, devices));
  c.argv = report->argv;
  if (!plan.config)
    c.notes.push_back("nothing fits, so the check ran the least demanding placement");
  if (c.OnlyComputeOverPredicted() && engine.version != kComputeRulesEngineVersion) {
    c.notes.push_back(fmt::format(
        "only compute buffers differ, and moetune's are the larger (the safe side): this engine, "
        "llama.cpp {}, reserves smaller compute buffers than llama.cpp {}, whose sizes "
        "moetune's rules follow (docs/engine.md)",
        engine.Describe(), kComputeRulesEngineVersion));
  }
  return c;
}

// The engine on this machine, for the version a configuration names; nullopt
// when none is found (a plan does not need one).
std::optional<EngineInfo> FindEngineQuietly(const std::string& llama_dir) {
  DiscoveryOptions d;
  d.llama_dir = llama_dir;
  auto e = DiscoverEngine(d);
  if (!e.ok()) return std::nullopt;
  return std::move(e).value();
}

// `--emit FORMAT`: the plan's llama-server command as ready-to-paste configuration.
Result<std::string> EmitPlan(const ModelInfo& m, const Plan& plan, const PlanRequest& req,
                             const std::optional<EngineInfo>& engine, const std::string& format) {
  MOETUNE_ASSIGN_OR_RETURN(EmitFormat f, ParseEmitFormat(format));
  // An absolute model path: the configuration is used from other folders.
  const std::string model =
      std::filesystem::absolute(CommandModelPath(m)).lexically_normal().string();
  EmitContext ctx;
  ctx.header.push_back(fmt::format("llama-server configuration planned by moetune {} for {}",
                                   MOETUNE_VERSION,
                                   std::filesystem::path(m.path).filename().string()));
  ctx.header.push_back(
      engine ? "for " + EngineVersionText(*engine) + " (" + engine->dir + ")"
             : "no llama.cpp engine was found here: the flags need a 2025 build or later "
               "(--n-cpu-moe, -fit)");
  ctx.header.push_back(fmt::format("context {}, {} free VRAM, {} reserved, {} margin",
                                   req.ctx.n_ctx, FormatBytes(Bytes(req.vram_free)),
                                   FormatBytes(Bytes(req.reserve)),
                                   FormatBytes(Bytes(req.margin))));
  for (const auto& n : plan.notes) ctx.header.push_back("note: " + n);
  if (!plan.config)
    return Error(ErrorKind::kInvalidArgument,
                 "nothing fits this GPU, so there is no configuration to emit (see the plan's "
                 "shortfall); free GPU memory, lower --ctx or use a smaller quantization");
  ctx.gpu = req.vram_free > 0;
  ServerConfig config = *plan.config;
  config.model = model;
  return EmitServerConfig(f, config, ctx);
}

// The --report document: the plan, with the predicted curve at the target
// depth (the options that load) when --predict gave one.
Status WritePlanReport(const ModelInfo& m, const Plan& plan, const PlanRequest& req,
                       const std::optional<PlanPrediction>& pred, std::optional<EngineInfo> engine,
                       const std::string& path) {
  PlanDocumentExtras extras;
  extras.invocation = OwnCommandLine();
  extras.engine = std::move(engine);
  if (pred) {
    // The predicted curve at the target depth, for the options that load.
    for (size_t i = 0; i < pred->options.size(); ++i) {
      const OptionPrediction& op = pred->options[i];
      if (!op.target.loads) continue;
      extras.predicted.push_back({plan.moe ? op.n_cpu_moe : op.ngl,
                                  op.target.prefill.tokens_per_second,
                                  op.target.decode.tokens_per_second});
    }
    extras.uncertainty = pred->uncertainty;
  }
  return WriteReportFile(path, PlanDocument(m, plan, req, extras), ModelFiles(m));
}

// `moetune plan` with its options parsed.
int RunPlan(PlanOpts& o) {
  o.machine.profile = o.profile;
  auto req = BuildRequest(o);
  if (!req.ok()) return ReportError(req.error());
  if (!o.rpc.empty() && !o.check && req->devices.empty()) {
    std::cerr << "moetune: error: --rpc applies to plan --check, or names the devices of "
                 "--vram A,B,... (one size per local GPU, then one per server)\n";
    return kExitUsage;
  }
  auto m = LoadModelInfo(o.model);
  if (!m.ok()) return ReportError(m.error());
  req->model_path = CommandModelPath(*m);
  if (auto st = CheckEngineAccepts(m->arch, req->ctx); !st.ok()) return ReportError(st.error());
  auto planned = PlanPlacement(m->gguf, m->arch, m->weights, *req);
  if (!planned.ok()) return ReportError(planned.error());
  // RPC devices: the command joins their servers.
  if (planned->config && !req->devices.empty() && !o.rpc.empty())
    planned->config->rpc = *ParseRpcList(o.rpc);  // checked by DeviceBudgetsFromFlags
  const Plan& plan = *planned;
  std::optional<PlanCheck> check;
  if (o.check) {
    auto c = CheckWithEngine(*m, plan, *req, o);
    if (!c.ok()) return ReportError(c.error());
    check = std::move(c).value();
  }
  std::optional<PlanPrediction> pred;
  if (o.predict) {
    auto p = PredictForPlan(*m, plan, *req, o.machine, o.threads);
    if (!p.ok()) return ReportError(p.error());
    pred = std::move(p).value();
  }
  std::optional<EngineInfo> engine;
  if (!o.emit.empty() || !o.report.empty()) engine = FindEngineQuietly(o.llama_dir);
  if (!o.report.empty()) {
    auto st = WritePlanReport(*m, plan, *req, pred, engine, o.report);
    if (!st.ok()) return ReportError(st.error());
  }
  std::string text;
  if (!o.emit.empty()) {
    auto e = EmitPlan(*m, plan, *req, engine, o.emit);
    if (!e.ok()) return ReportError(e.error());
    text = *e;
  } else if (o.json) {
    nlohmann::json j = PlanJson(*m, plan, *req);
    if (check) j["check"] = PlanCheckJson(*check);
    if (pred) AddPlanPredictionJson(plan, *pred, &j);
    text = JsonOutput(j);
  } else {
    text = PlanText(*m, plan, *req) + (check ? PlanCheckText(*check) : "") +
           (pred ? PlanPredictionText(plan, *pred) : "");
  }
  // The model (every part of a split one) is an input: `-o MODEL.gguf` is refused.
  auto st = WriteOutput(o.output, text, ModelFiles(*m));
  if (!st.ok()) return ReportError(st.error());
  if (check && !check->agrees()) return kExitCheckDisagrees;
  if (!plan.config) {
    std::cerr << "moetune: nothing fits: " << FormatBytes(Bytes(plan.shortfall))
              << " short (no command printed)\n";
    return kExitNothingFits;
  }
  return kExitOk;
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, CommandRun* run) {
  auto o = std::make_shared<PlanOpts>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Plan the GPU/CPU split (-ngl 99 --n-cpu-moe N) for a GPU");
  cmd->add_option("model", o->model, "GGUF model file (any part of a split model)")->required();
  cmd->add_option("--ctx,-c", o->ctx, "Context length (e.g. 32768 or 32K)")
      ->check(TokenCount(1, kMaxContext))
      ->capture_default_str();
  AddGpuBudgetFlags(cmd, &o->machine.gpu, /*device_lists=*/true);
  cmd->add_option("--profile", o->profile, "Machine profile to read when --vram is absent");
  cmd->add_option("--margin", o->margin, "Safety margin kept free on the GPU")
      ->check(ByteSize(0, kMaxMemoryBytes))
      ->capture_default_str();
  cmd->add_option("--host-ram", o->host_ram, "Host RAM available (default: MemAvailable)")
      ->check(ByteSize(0, kMaxMemoryBytes));
  cmd->add_option("--ctk", o->ctk, "KV cache type for K")
      ->check(KvCacheType())
      ->capture_default_str();
  cmd->add_option("--ctv", o->ctv, "KV cache type for V")
      ->check(KvCacheType())
      ->capture_default_str();
  cmd->add_option("--ubatch,--ub", o->ubatch, "Micro-batch size (llama.cpp -ub)")
      ->check(IntRange(1, kMaxBatch))
      ->capture_default_str();
  cmd->add_option("--batch,-b", o->batch, "Logical batch size (llama.cpp -b)")
      ->check(IntRange(1, kMaxBatch))
      ->capture_default_str();
  cmd->add_option("--parallel,--np", o->parallel, "Server slots (llama-server -np)")
      ->check(IntRange(1, kMaxParallel))
      ->capture_default_str();
  cmd->add_flag("--kvu", o->kvu,
                "One KV cache shared by all slots (llama-server -kvu); default: one cache of "
                "ctx/parallel tokens per slot");
  cmd->add_option("--fa", o->fa, "Flash attention: on or off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  cmd->add_flag("--no-fine-fill", o->no_fine_fill,
                "Do not propose -ot overrides for single expert tensors");
  cmd->add_flag(
      "--check", o->check,
      "Compare the prediction with llama.cpp's own dry run (llama-fit-params) for this placement");
  cmd->add_option("--rpc", o->rpc,
                  "With --check, or with --vram A,B,... (one size per local GPU, then one per "
                  "server): RPC servers (HOST:PORT[,...], ggml-rpc-server) whose devices join "
                  "the engine's dry run, to check the device/host split without a GPU")
      ->check(RpcServerList());
  cmd->add_option("--llama-dir", o->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  cmd->add_flag(
      "--predict", o->predict,
      "Predict prefill/decode speed of every N with the speed model (docs/speed-model.md)");
  cmd->add_option("-t,--threads", o->threads, "Threads for --predict (default: performance cores)")
      ->check(IntRange(1, kMaxThreads));
  AddMachineFlags(cmd, &o->machine, /*with_vram=*/false, /*with_profile=*/false);
  cmd->add_flag("--json", o->json, "Print JSON (fields in docs/cli.md)");
  cmd->add_option("-o,--output", o->output, "Write to this file (atomically) instead of stdout");
  cmd->add_option("--report", o->report,
                  "Also write a report: FILE.html (self-contained, with charts) or FILE.md")
      ->check(ReportPathValidator());
  auto* emit = cmd->add_option("--emit", o->emit,
                               "Print the llama-server configuration instead of the table: " +
                                   EmitFormatList())
                   ->check(EmitFormatValidator());
  emit->excludes(cmd->get_option("--json"));
  cmd->callback([o, run] { *run = WithModel(&o->model, [o]() -> int { return RunPlan(*o); }); });
}

}  // namespace moetune
