// moetune demo: the main job end to end on any machine, in a few minutes on
// two cores: find the engine, synthesize a small MoE model, plan it for a
// pretend small GPU, check llama.cpp's own memory dry run, benchmark a few
// configurations with the real llama-bench, summarize what it found, and end
// with a tune of the model on a simulated GPU machine and with the real engine
// on this CPU, side by side.
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/machine_flags.h"
#include "cli/tune_engine.h"
#include "cli/validators.h"
#include "config/flags.h"
#include "config/server_config.h"
#include "engine/engine_info.h"
#include "engine/fit_params.h"
#include "engine/llama_bench.h"
#include "hw/system_memory.h"
#include "model/model_info.h"
#include "model/synth.h"
#include "plan/placement.h"
#include "report/bench_report.h"
#include "report/engine_report.h"
#include "report/model_report.h"
#include "tune/tune_job.h"
#include "util/command_files.h"
#include "util/utf8.h"

namespace moetune {
namespace {

struct DemoArgs {
  std::string dir = ".moetune/demo";
  std::string llama_dir;
  std::string preset = "qwen3moe";
  int repetitions = 3;
  std::string sim_machine = "rtx4070-12g,ddr4-3200-2ch,8c16t";
  double tune_budget = 2;  // minutes for the real-engine tune
};

// One tune of the demo's last step.
struct DemoTune {
  std::string label;
  TuneEngine engine;
  TuneJobRequest request;
  TuneReport report;
};

std::string Speedup(const std::optional<double>& tuned, const std::optional<double>& defaults) {
  return tuned && defaults && *tuned > 0 ? fmt::format("{:.2f}x", *defaults / *tuned)
                                         : std::string("-");
}

// Everything the demo prints passes ForTerminal: model names, engine output
// and the plan's text may hold control bytes or invalid UTF-8.
void Out(const std::string& text) { std::cout << ForTerminal(text) << std::flush; }

void Step(int n, const std::string& what) { Out(fmt::format("\n## {}. {}\n\n", n, what)); }

// The same model and workload twice: on a what-if GPU machine through the
// speed model (seconds), and with the real llama.cpp on this CPU (a tight
// budget), each through the tune job as `moetune tune` runs it. Each keeps a
// journal in the demo folder, so a second demo resumes.
Result<std::array<DemoTune, 2>> RunDemoTunes(const DemoArgs& a, const std::string& model,
                                             const ModelInfo& info) {
  namespace fs = std::filesystem;
  SimBenchOptions sim_options;
  sim_options.engine = "sim";
  sim_options.machine.machine = a.sim_machine;
  std::array<DemoTune, 2> tunes;
  tunes[0].label = "simulated";
  MOETUNE_ASSIGN_OR_RETURN(tunes[0].engine, SimTuneEngine(sim_options));
  tunes[1].label = "real CPU";
  MOETUNE_ASSIGN_OR_RETURN(tunes[1].engine, RealTuneEngine(a.llama_dir, /*force=*/false));
  for (DemoTune& t : tunes) {
    const bool simulated = t.engine.machine.simulated;
    TuneJobRequest& q = t.request;
    q.model_path = model;
    q.model = &info;
    q.ctx = 1024;
    q.workload = *ParseWorkload("256:64");
    q.budget_seconds = simulated ? 20 * 60 : a.tune_budget * 60;
    q.repetitions = simulated ? 3 : 2;
    q.journal_path =
        (fs::path(a.dir) / (simulated ? "tune-sim.journal" : "tune-cpu.journal")).string();
    std::string line = fmt::format("moetune tune {} --ctx 1024 --workload 256:64 --journal {}",
                                   model, q.journal_path);
    if (simulated) {
      line += t.engine.reproduce;
    } else {
      line += fmt::format(" --budget {} -r 2", a.tune_budget);
      if (!a.llama_dir.empty()) line += " --llama-dir " + a.llama_dir;
    }
    q.reproduce = {line};
    Out("$ " + line + "\n");
    auto job = RunTuneJob(q, t.engine.machine, *t.engine.engine);
    if (!job.ok()) return job.error().Context("demo: the " + t.label + " tune");
    t.report = std::move(job->report);
  }
  return tunes;
}

// The two picks side by side, then their commands.
void PrintDemoTunes(const std::array<DemoTune, 2>& tunes) {
  const TuneReport& sim = tunes[0].report;
  const TuneReport& real = tunes[1].report;
  Out("\n| | simulated GPU machine | real llama.cpp on this CPU |\n|---|---|---|\n");
  auto row = [&](const std::string& name, auto&& cell) {
    Out(fmt::format("| {} | {} | {} |\n", name, cell(sim), cell(real)));
  };
  row("machine", [](const TuneReport& r) { return r.machine; });
  row(Flag(FlagId::kNCpuMoe).spelling, [](const TuneReport& r) {
    // Without a GPU the pick writes no --n-cpu-moe: every layer is on the host (-ngl 0).
    const int n = r.result.best.placement.WrittenNCpuMoe();
    return (n >= 0 ? std::to_string(n) : std::string("none, -ngl 0")) +
           (r.result.placement_tuned ? "" : " (no GPU: not measured)");
  });
  row("-t", [](const TuneReport& r) { return std::to_string(r.result.best.threads); });
  row("-ub", [](const TuneReport& r) { return std::to_string(r.result.best.n_ubatch); });
  row("-fa",
      [](const TuneReport& r) { return std::string(FlashAttnName(r.result.best.flash_attn)); });
  row("load mode", [](const TuneReport& r) {
    return r.result.best.load_mode == LoadMode::kNone ? std::string("read into RAM (-lm none)")
                                                      : std::string("memory-mapped");
  });
  row("vs llama.cpp defaults (empty context)", [](const TuneReport& r) {
    const auto& v = r.result.versus_defaults;
    return v ? Speedup(v->tuned_seconds_depth0, v->default_seconds_depth0) : std::string("-");
  });
  row("vs llama.cpp defaults (full context)", [](const TuneReport& r) {
    const auto& v = r.result.versus_defaults;
    return v ? Speedup(v->tuned_seconds_ctx, v->default_seconds_ctx) : std::string("-");
  });
  row("measured (resumed)", [](const TuneReport& r) {
    return fmt::format("{} ({})", r.result.measured, r.result.resumed);
  });
  for (const DemoTune& t : tunes) {
    Out(fmt::format("\n{} pick:\n    {}\n", t.label, fmt::join(t.report.Command(), " ")));
  }
  const auto n_and_t = [](const TuneReport& r) {
    return FlagText(FlagId::kNCpuMoe, r.result.best.placement.WrittenNCpuMoe()) + " " +
           FlagText(FlagId::kThreads, r.result.best.threads);
  };
  Out(fmt::format("\ntune step: simulated {}; real {}\n", n_and_t(sim), n_and_t(real)));
}

// Step 2: the demo's model, written once and reused while it still reads as
// a model; a corrupt or truncated one is written again (and said so).
Result<std::string> DemoModel(const DemoArgs& a) {
  namespace fs = std::filesystem;
  const std::string model = (fs::path(a.dir) / fmt::format("{}-tiny.gguf", a.preset)).string();
  MOETUNE_ASSIGN_OR_RETURN(SynthSpec spec, SynthPreset(a.preset));
  MOETUNE_ASSIGN_OR_RETURN(auto scale, ParseSynthScale("tiny"));
  SynthOptions sopt;
  sopt.spec = ScaleSynthSpec(spec, scale);
  bool rewrite = false;
  if (fs::exists(model)) {
    if (auto cached = LoadModelInfo(model); !cached.ok()) {
      Out(fmt::format("(the cached {} is unusable: {}; writing it again)\n", model,
                      cached.error().message()));
      rewrite = true;
    }
  }
  std::error_code ec;
  if (rewrite || !fs::exists(model)) {
    // The cached file just read is an input of this command (util/command_files.h),
    // never written over: the new model is written beside it, then takes its place.
    const std::string fresh = rewrite ? model + ".new" : model;
    MOETUNE_TRY(WriteSynthModel(sopt, fresh));
    if (rewrite) {
      fs::rename(fresh, model, ec);
      if (ec) {
        fs::remove(fresh, ec);
        return Error(ErrorKind::kIo,
                     fmt::format("cannot replace the cached {}: {}", model, ec.message()));
      }
    }
  }
  Out(fmt::format("{}: {} ({}), {} layers, {} experts ({} used), {}\n", model, sopt.spec.model_name,
                  sopt.spec.arch, sopt.spec.n_layer, sopt.spec.n_expert, sopt.spec.n_expert_used,
                  FormatBytes(Bytes(static_cast<int64_t>(fs::file_size(model, ec))))));
  // The model is complete: the plan and the tunes read it.
  ReleaseOutputFile(model);
  return model;
}

// Step 3: the plan `moetune plan MODEL --vram 72MiB --margin 16MiB` prints; its N.
Result<int> DemoPlan(const ModelInfo& m, const std::string& model) {
  PlanRequest req;
  req.model_path = CommandModelPath(m);
  req.vram_free = int64_t{72} << 20;
  req.margin = int64_t{16} << 20;
  req.host_ram_available = ReadSystemMemory(SysRoot("/")).available_bytes;
  auto plan = PlanPlacement(m.gguf, m.arch, m.weights, req);
  if (!plan.ok()) return plan.error().Context("demo: the plan step");
  const PlacementOption* best = plan->best();
  if (best == nullptr) {
    return Error(ErrorKind::kInternal, "demo: the plan step found no placement that fits 72 MiB");
  }
  Out(PlanText(m, *plan, req));
  Out(
      fmt::format("\nplan step: {} (the plan `moetune plan {} --vram 72MiB --margin "
                  "16MiB` prints)\n",
                  FlagText(FlagId::kNCpuMoe, best->n_cpu_moe), model));
  return best->n_cpu_moe;
}

// Step 4: llama.cpp's own memory dry run, everything on the GPU and at the plan's N.
void DemoFit(const EngineInfo& info, const std::string& model, int planned_n) {
  for (int n : {0, planned_n}) {
    WeightPlacement placement;
    placement.has_device = true;
    placement.n_gpu_layers = 99;
    placement.n_cpu_moe = n;
    ContextParams ctx;
    ctx.n_ctx = 4096;
    auto fit = RunFitParams(info, PlannedConfig(model, placement, ctx, /*moe=*/true));
    if (!fit.ok()) {
      Out(fmt::format("{}: {}\n", FlagText(FlagId::kNCpuMoe, n), fit.error().message()));
      continue;
    }
    for (const auto& d : fit->devices) {
      Out(fmt::format("{}: {} model {}, context {}, compute {}\n", FlagText(FlagId::kNCpuMoe, n),
                      d.name, FormatBytes(d.model_bytes), FormatBytes(d.context_bytes),
                      FormatBytes(d.compute_bytes)));
    }
  }
}

// Step 5: prefill and decode at both N with one and a few threads, with the real llama-bench.
BenchRun DemoBench(const DemoArgs& a, const EngineInfo& info, const std::string& model,
                   int planned_n) {
  std::vector<RunConfig> configs;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> threads = {1};
  if (cores > 1) threads.push_back(std::min(cores, 4));
  for (int n : {0, planned_n}) {
    for (int t : threads) {
      for (auto [pp, tg] : {std::pair{64, 0}, std::pair{0, 16}}) {
        RunConfig c;
        c.model = model;
        c.placement.n_cpu_moe = n;
        c.threads = t;
        c.n_prompt = pp;
        c.n_gen = tg;
        c.repetitions = a.repetitions;
        configs.push_back(c);
      }
    }
  }
  LlamaBenchEngine engine(info);
  ProgressCallback progress;
  if (::isatty(2))
    progress = [](const BenchProgress& p) {
      std::cerr << "\r\033[K" << ForTerminal(FormatProgressLine(p)) << std::flush;
    };
  BenchRun run = engine.Run(configs, progress);
  if (progress) std::cerr << "\n";
  Out(FormatBenchMarkdown(run));
  return run;
}

// Step 6: what the benchmark found.
void DemoSummary(const EngineInfo& info, const BenchRun& run) {
  const RunResult* best_pp = nullptr;
  const RunResult* best_tg = nullptr;
  for (const auto& r : run.results) {
    if (!r.ok()) continue;
    const RunResult*& best = r.config.kind() == TestKind::kPrefill ? best_pp : best_tg;
    if (best == nullptr || ResultSummary(r).median > ResultSummary(*best).median) best = &r;
  }
  Out(fmt::format("- engine: {} ({}), backends {}\n", info.version_line, info.origin,
                  run.backends.empty() ? "unknown" : run.backends));
  for (const auto& w : info.warnings) Out("- WARNING: " + w + "\n");
  for (const RunResult* b : {best_pp, best_tg}) {
    if (b == nullptr) continue;
    Out(fmt::format("- fastest {}: {:.1f} t/s (median) with {} {}\n", b->config.test_name(),
                    ResultSummary(*b).median,
                    FlagText(FlagId::kNCpuMoe, b->config.placement.n_cpu_moe),
                    FlagText(FlagId::kThreads, b->config.threads)));
  }
  Out(fmt::format(
      "- {} configurations measured in {} engine processes with {} model loads; {} failed\n",
      run.results.size(), run.invocations.size(), run.TotalModelLoads(), run.FailureCount()));
  Out("- on this CPU-only engine every layer runs on the CPU, so --n-cpu-moe changes only where "
      "the\n"
      "  buffers live; with a CUDA engine the same commands measure the real GPU/CPU split\n");
}

int Run(const DemoArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto finished = [&t0] {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Out(fmt::format("- demo finished in {:.1f} s\n", s));
  };
  std::error_code ec;
  std::filesystem::create_directories(a.dir, ec);
  if (ec)
    return ReportError(
        Error(ErrorKind::kIo, fmt::format("cannot create '{}': {}", a.dir, ec.message())));

  Out("# moetune demo\n");
  Step(1, "Engine");
  DiscoveryOptions dopt;
  dopt.llama_dir = a.llama_dir;
  auto info = DiscoverEngine(dopt);
  if (!info.ok()) return ReportError(info.error());
  Out(FormatEngineInfo(*info));

  Step(2, "A small synthetic MoE model");
  auto model = DemoModel(a);
  if (!model.ok()) return ReportError(model.error());
  auto loaded = LoadModelInfo(*model);
  if (!loaded.ok()) return ReportError(loaded.error());

  Step(3, "Plan for a pretend GPU with 72 MiB free (16 MiB margin)");
  auto planned_n = DemoPlan(*loaded, *model);
  if (!planned_n.ok()) return ReportError(planned_n.error());

  Step(4, "llama.cpp's own memory dry run (llama-fit-params -fitp on)");
  DemoFit(*info, *model, *planned_n);

  Step(5, "Benchmark with the real llama-bench");
  const BenchRun run = DemoBench(a, *info, *model, *planned_n);

  Step(6, "Summary");
  DemoSummary(*info, run);
  if (run.FailureCount() > 0) {
    finished();
    return kExitError;
  }

  Step(7, "Tune: a simulated GPU machine and the real CPU engine, side by side");
  auto tunes = RunDemoTunes(a, *model, *loaded);
  if (!tunes.ok()) return ReportError(tunes.error());
  PrintDemoTunes(*tunes);
  finished();
  return kExitOk;
}

}  // namespace

void RegisterDemoCommand(CLI::App& app, CommandRun* run) {
  auto a = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand(
      "demo",
      "Synthesize a small MoE model, plan it, benchmark it and tune it (simulated GPU machine "
      "and the real engine)");
  cmd->add_option("--dir", a->dir, "Working folder for the demo's files (default .moetune/demo)");
  cmd->add_option("--llama-dir", a->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  cmd->add_option("--preset", a->preset, "Model shape to synthesize (default qwen3moe)")
      ->check(Parses(SynthPreset, "PRESET"));
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per test (default 3)")
      ->check(IntRange(1, kMaxRepetitions));
  cmd->add_option("--sim-machine", a->sim_machine,
                  "What-if machine of the simulated tune (presets, see `moetune machines`)")
      ->check(MachinePresetsValidator())
      ->capture_default_str();
  cmd->add_option("--tune-budget", a->tune_budget,
                  "Minutes for the real-engine tune (the last step)")
      ->check(NumberRange(0.1, 60.0))
      ->capture_default_str();
  cmd->callback([a, run] { *run = [a] { return Run(*a); }; });
}

}  // namespace moetune
