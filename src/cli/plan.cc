// `moetune plan MODEL --ctx N --vram SIZE ...`: the smallest --n-cpu-moe that
// fits this GPU with a safety margin, the breakdown per device, a table over
// every N, host RAM, and the exact llama-server command.
#include <fmt/format.h>

#include <iostream>
#include <optional>

#include "cli/command.h"
#include "cli/plan_predict.h"
#include "engine/engine_info.h"
#include "engine/fit_params.h"
#include "gguf/ggml_type.h"
#include "hw/machine_profile.h"
#include "hw/system_memory.h"
#include "model/model_info.h"
#include "plan/check.h"
#include "plan/placement.h"
#include "report/model_report.h"
#include "report/prediction_report.h"
#include "util/units.h"

namespace moetune {

namespace {

struct PlanOpts {
  std::string model;
  std::string ctx = "4096";
  std::string vram;
  std::string profile;
  std::string reserve = "0";
  std::string margin = "1024MiB";
  std::string host_ram;
  std::string ctk = "f16";
  std::string ctv = "f16";
  int ubatch = 512;
  int batch = 2048;
  int parallel = 1;
  std::string fa = "on";
  bool no_fine_fill = false;
  bool json = false;
  bool check = false;
  std::string llama_dir;
  std::string output;
  bool predict = false;
  int threads = 0;
  MachineFlags machine;
};

Result<uint32_t> CacheType(const std::string& s, const char* flag) {
  auto t = GgmlTypeByName(s);
  static const char* kAllowed[] = {"f32",  "f16",    "bf16", "q8_0", "q4_0",
                                   "q4_1", "iq4_nl", "q5_0", "q5_1"};
  for (const char* a : kAllowed) {
    if (t && t->name == a) return t->id;
  }
  return Error(
      ErrorKind::kInvalidArgument,
      fmt::format("{} '{}' is not a KV cache type llama.cpp accepts; use one of f32, f16, bf16, "
                  "q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1",
                  flag, s));
}

// Free VRAM of the first GPU in the profile `moetune doctor` saved.
Result<Bytes> VramFromProfile(const std::string& path_opt) {
  const std::string path = path_opt.empty() ? DefaultMachineProfilePath() : path_opt;
  auto no_vram = [](const std::string& why) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("no --vram given, and {}. Pass --vram SIZE (free VRAM, e.g. --vram 12GiB)",
                    why));
  };
  if (path.empty()) return no_vram("no machine profile path ($HOME is not set)");
  auto profile = LoadMachineProfile(path);
  if (!profile.ok()) return no_vram(profile.error().message());
  if (profile->gpus.empty())
    return no_vram(fmt::format("the machine profile {} lists no GPU", path));
  const GpuInfo& g = profile->gpus.front();
  std::cerr << fmt::format("moetune: --vram from {} ({}, {} free, measured {})\n", path, g.name,
                           FormatBytes(Bytes(g.free_bytes)), profile->created_at);
  return Bytes(g.free_bytes);
}

Result<PlanRequest> BuildRequest(const PlanOpts& o) {
  PlanRequest r;
  MOETUNE_ASSIGN_OR_RETURN(r.ctx.n_ctx, ParseTokenCount(o.ctx));
  Bytes vram;
  if (o.vram.empty()) {
    MOETUNE_ASSIGN_OR_RETURN(vram, VramFromProfile(o.profile));
  } else {
    MOETUNE_ASSIGN_OR_RETURN(vram, ParseBytes(o.vram));
  }
  MOETUNE_ASSIGN_OR_RETURN(Bytes reserve, ParseBytes(o.reserve));
  MOETUNE_ASSIGN_OR_RETURN(Bytes margin, ParseBytes(o.margin));
  r.vram_free = vram.count();
  r.reserve = reserve.count();
  r.margin = margin.count();
  if (r.reserve > r.vram_free)
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("--reserve {} is more than --vram {}", o.reserve, o.vram));
  if (!o.host_ram.empty()) {
    MOETUNE_ASSIGN_OR_RETURN(Bytes h, ParseBytes(o.host_ram));
    r.host_ram_available = h.count();
  } else {
    r.host_ram_available = ReadSystemMemory(SysRoot("/")).available_bytes;
  }
  MOETUNE_ASSIGN_OR_RETURN(r.ctx.type_k, CacheType(o.ctk, "--ctk"));
  MOETUNE_ASSIGN_OR_RETURN(r.ctx.type_v, CacheType(o.ctv, "--ctv"));
  if (o.ubatch < 1 || o.batch < 1 || o.parallel < 1)
    return Error(ErrorKind::kInvalidArgument,
                 "--ubatch, --batch and --parallel must be at least 1");
  r.ctx.n_ubatch = std::min(o.ubatch, o.batch);
  r.ctx.n_batch = o.batch;
  r.ctx.n_seq = o.parallel;
  if (o.fa != "on" && o.fa != "off")
    return Error(ErrorKind::kInvalidArgument, fmt::format("--fa '{}': use on or off", o.fa));
  r.ctx.flash_attn = o.fa == "on";
  if (!r.ctx.flash_attn && r.ctx.type_v != ggml_type::kF16 && r.ctx.type_v != ggml_type::kF32 &&
      r.ctx.type_v != ggml_type::kBF16)
    return Error(
        ErrorKind::kInvalidArgument,
        "a quantized V cache needs flash attention (llama.cpp refuses it otherwise): use --fa on");
  r.fine_fill = !o.no_fine_fill;
  return r;
}

// Runs llama-fit-params for the recommended placement (or all experts on the
// CPU when nothing fits) and compares it with the prediction.
Result<PlanCheck> CheckWithEngine(const ModelInfo& m, const Plan& plan, const PlanRequest& req,
                                  const std::string& llama_dir) {
  DiscoveryOptions d;
  d.llama_dir = llama_dir;
  MOETUNE_ASSIGN_OR_RETURN(EngineInfo engine, DiscoverEngine(d));
  const PlacementOption& option = plan.best() ? *plan.best() : plan.options.back();
  PlacementArgs p;
  p.n_gpu_layers = option.ngl;
  p.n_cpu_moe = option.n_cpu_moe;
  if (plan.best() && !plan.fine_fill.empty()) {
    p.n_cpu_moe = plan.fine_fill_n_cpu_moe;
    p.override_tensor = plan.fine_fill.front().pattern;
  }
  p.ctx_size = static_cast<int>(req.ctx.n_ctx);
  p.n_batch = req.ctx.n_batch;
  p.n_ubatch = req.ctx.n_ubatch;
  p.type_k = GgmlTypeName(req.ctx.type_k);
  p.type_v = GgmlTypeName(req.ctx.type_v);
  p.flash_attn = req.ctx.flash_attn ? "on" : "off";
  FitParamsOptions fo;
  fo.count_host_weights = true;
  auto report = RunFitParams(engine, m.path, p, fo);
  if (!report.ok()) return report.take_error().Context("plan --check");
  // The fine fill moves part of one layer's experts; compare the option it came from.
  PlanCheck c = ComparePlanWithEngine(m.arch, m.weights, req, option, report->devices);
  c.n_cpu_moe = p.n_cpu_moe;
  c.argv = report->argv;
  if (!p.override_tensor.empty())
    c.notes.push_back(
        "the engine ran with the fine-fill -ot override; moetune's figures are for --n-cpu-moe " +
        std::to_string(option.n_cpu_moe) + " without it");
  return c;
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, CommandRun* run) {
  auto o = std::make_shared<PlanOpts>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Plan the GPU/CPU split (-ngl 99 --n-cpu-moe N) for a GPU");
  cmd->add_option("model", o->model, "GGUF model file (any part of a split model)")->required();
  cmd->add_option("--ctx,-c", o->ctx, "Context length (e.g. 32768 or 32K)")->capture_default_str();
  cmd->add_option(
      "--vram", o->vram,
      "Free GPU memory (e.g. 12GiB, 11500MiB); default: first GPU of the doctor's profile");
  cmd->add_option("--profile", o->profile, "Machine profile to read when --vram is absent");
  cmd->add_option("--reserve", o->reserve, "Memory other programs hold or will hold on the GPU")
      ->capture_default_str();
  cmd->add_option("--margin", o->margin, "Safety margin kept free on the GPU")
      ->capture_default_str();
  cmd->add_option("--host-ram", o->host_ram, "Host RAM available (default: MemAvailable)");
  cmd->add_option("--ctk", o->ctk, "KV cache type for K")->capture_default_str();
  cmd->add_option("--ctv", o->ctv, "KV cache type for V")->capture_default_str();
  cmd->add_option("--ubatch,--ub", o->ubatch, "Micro-batch size (llama.cpp -ub)")
      ->capture_default_str();
  cmd->add_option("--batch,-b", o->batch, "Logical batch size (llama.cpp -b)")
      ->capture_default_str();
  cmd->add_option("--parallel,--np", o->parallel, "Server slots (llama-server -np)")
      ->capture_default_str();
  cmd->add_option("--fa", o->fa, "Flash attention: on or off")->capture_default_str();
  cmd->add_flag("--no-fine-fill", o->no_fine_fill,
                "Do not propose -ot overrides for single expert tensors");
  cmd->add_flag(
      "--check", o->check,
      "Compare the prediction with llama.cpp's own dry run (llama-fit-params) for this placement");
  cmd->add_option("--llama-dir", o->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  cmd->add_flag(
      "--predict", o->predict,
      "Predict prefill/decode speed of every N with the speed model (docs/speed-model.md)");
  cmd->add_option("-t,--threads", o->threads, "Threads for --predict (default: performance cores)");
  AddMachineFlags(cmd, &o->machine, /*with_vram=*/false, /*with_profile=*/false);
  cmd->add_flag("--json", o->json, "Print JSON (fields in docs/cli.md)");
  cmd->add_option("-o,--output", o->output, "Write to this file (atomically) instead of stdout");
  cmd->callback([o, run] {
    *run = [o]() -> int {
      o->machine.profile = o->profile;
      if (o->vram.empty()) o->vram = WhatIfVram(o->machine);
      auto req = BuildRequest(*o);
      if (!req.ok()) return ReportError(req.error());
      auto m = LoadModelInfo(o->model);
      if (!m.ok()) return ReportError(m.error());
      const Plan plan = PlanPlacement(m->gguf, m->arch, m->weights, *req);
      std::optional<PlanCheck> check;
      if (o->check) {
        auto c = CheckWithEngine(*m, plan, *req, o->llama_dir);
        if (!c.ok()) return ReportError(c.error());
        check = std::move(c).value();
      }
      std::optional<PlanPrediction> pred;
      if (o->predict) {
        auto p = PredictForPlan(*m, plan, *req, o->machine, o->threads);
        if (!p.ok()) return ReportError(p.error());
        pred = std::move(p).value();
      }
      std::string text;
      if (o->json) {
        nlohmann::json j = PlanJson(*m, plan, *req);
        if (check) j["check"] = PlanCheckJson(*check);
        if (pred) AddPlanPredictionJson(plan, *pred, &j);
        text = j.dump(2) + "\n";
      } else {
        text = PlanText(*m, plan, *req) + (check ? PlanCheckText(*check) : "") +
               (pred ? PlanPredictionText(plan, *pred) : "");
      }
      auto st = WriteOutput(o->output, text);
      return st.ok() ? kExitOk : ReportError(st.error());
    };
  });
}

}  // namespace moetune
