// moetune demo: the main job end to end on any machine, in a few minutes on
// two cores: find the engine, synthesize a small MoE model, plan it for a
// pretend small GPU, check llama.cpp's own memory dry run, benchmark a few
// configurations with the real llama-bench, and summarize what it found.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/validators.h"
#include "engine/engine_info.h"
#include "engine/fit_params.h"
#include "engine/llama_bench.h"
#include "model/model_info.h"
#include "model/synth.h"
#include "plan/launch.h"
#include "report/bench_report.h"
#include "report/engine_report.h"
#include "util/subprocess.h"
#include "util/utf8.h"

namespace moetune {
namespace {

struct DemoArgs {
  std::string dir = ".moetune/demo";
  std::string llama_dir;
  std::string preset = "qwen3moe";
  int repetitions = 3;
};

// Everything the demo prints passes ForTerminal: model names, engine output
// and the plan's text may hold control bytes or invalid UTF-8.
void Out(const std::string& text) { std::cout << ForTerminal(text) << std::flush; }

void Step(int n, const std::string& what) { Out(fmt::format("\n## {}. {}\n\n", n, what)); }

int Run(const DemoArgs& a) {
  const auto t0 = std::chrono::steady_clock::now();
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(a.dir, ec);
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
  const std::string model = (fs::path(a.dir) / fmt::format("{}-tiny.gguf", a.preset)).string();
  auto spec = SynthPreset(a.preset);
  if (!spec.ok()) return ReportError(spec.error());
  auto scale = ParseSynthScale("tiny");
  if (!scale.ok()) return ReportError(scale.error());
  SynthOptions sopt;
  sopt.spec = ScaleSynthSpec(*spec, *scale);
  // A cached model from an earlier run is reused only if it still reads as a
  // model; a corrupt or truncated one is written again (and said so).
  if (fs::exists(model)) {
    if (auto cached = LoadModelInfo(model); !cached.ok()) {
      Out(fmt::format("(the cached {} is unusable: {}; writing it again)\n", model,
                      cached.error().message()));
      fs::remove(model, ec);
    }
  }
  if (!fs::exists(model)) {
    auto s = WriteSynthModel(sopt, model);
    if (!s.ok()) return ReportError(s.error());
  }
  Out(fmt::format("{}: {} ({}), {} layers, {} experts ({} used), {}\n", model, sopt.spec.model_name,
                  sopt.spec.arch, sopt.spec.n_layer, sopt.spec.n_expert, sopt.spec.n_expert_used,
                  FormatBytes(Bytes(static_cast<int64_t>(fs::file_size(model, ec))))));

  Step(3, "Plan for a pretend GPU with 72 MiB free (16 MiB margin)");
  std::error_code exe_ec;
  const std::string self = fs::read_symlink("/proc/self/exe", exe_ec).string();
  int planned_n = 0;
  {
    // `moetune plan` itself (this binary), as a user would run it; a failing
    // plan ends the demo with the plan's own message.
    RunOptions o;
    o.spawn.argv = {self, "plan", model, "--vram", "72MiB", "--margin", "16MiB", "--json"};
    o.timeout = std::chrono::milliseconds(120000);
    auto out = RunProcess(o);
    if (!out.ok()) return ReportError(out.error().Context("demo: the plan step"));
    const auto j = nlohmann::json::parse(out->stdout_text, nullptr, false);
    if (!out->status.success() || j.is_discarded() || !j.contains("n_cpu_moe") ||
        !j["n_cpu_moe"].is_number_integer()) {
      std::string why = out->stderr_tail.empty() ? out->status.Describe() : out->stderr_tail.back();
      return ReportError(
          Error(ErrorKind::kInternal,
                fmt::format("demo: `moetune plan` failed ({}): {}", out->status.Describe(), why)));
    }
    // The plan's recommended N (top-level "n_cpu_moe" of `plan --json`).
    planned_n = j["n_cpu_moe"].get<int>();
    RunOptions t = o;
    t.spawn.argv.pop_back();  // the same plan as a table for the reader
    if (auto table = RunProcess(t); table.ok() && table->status.success()) {
      Out(table->stdout_text);
    }
    Out(fmt::format("\nplan step: --n-cpu-moe {} (from `moetune plan --json`)\n", planned_n));
  }

  Step(4, "llama.cpp's own memory dry run (llama-fit-params -fitp on)");
  for (int n : {0, planned_n}) {
    LaunchConfig launch;
    launch.moe = true;
    launch.placement.n_gpu_layers = 99;
    launch.placement.n_cpu_moe = n;
    launch.ctx.n_ctx = 4096;
    auto fit = RunFitParams(*info, model, MemoryShapingFlags(launch));
    if (!fit.ok()) {
      Out(fmt::format("--n-cpu-moe {}: {}\n", n, fit.error().message()));
      continue;
    }
    for (const auto& d : fit->devices) {
      Out(fmt::format("--n-cpu-moe {}: {} model {}, context {}, compute {}\n", n, d.name,
                      FormatBytes(d.model_bytes), FormatBytes(d.context_bytes),
                      FormatBytes(d.compute_bytes)));
    }
  }

  Step(5, "Benchmark with the real llama-bench");
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
  LlamaBenchEngine engine(*info);
  ProgressCallback progress;
  if (::isatty(2))
    progress = [](const BenchProgress& p) {
      std::cerr << "\r\033[K" << ForTerminal(FormatProgressLine(p)) << std::flush;
    };
  const BenchRun run = engine.Run(configs, progress);
  if (progress) std::cerr << "\n";
  Out(FormatBenchMarkdown(run));

  Step(6, "Summary");
  const RunResult* best_pp = nullptr;
  const RunResult* best_tg = nullptr;
  for (const auto& r : run.results) {
    if (!r.ok()) continue;
    const RunResult*& best = r.config.kind() == TestKind::kPrefill ? best_pp : best_tg;
    if (best == nullptr || ResultSummary(r).median > ResultSummary(*best).median) best = &r;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Out(fmt::format("- engine: {} ({}), backends {}\n", info->version_line, info->origin,
                  run.backends.empty() ? "unknown" : run.backends));
  for (const auto& w : info->warnings) Out("- WARNING: " + w + "\n");
  for (const RunResult* b : {best_pp, best_tg}) {
    if (b == nullptr) continue;
    Out(fmt::format("- fastest {}: {:.1f} t/s (median) with --n-cpu-moe {} -t {}\n",
                    b->config.test_name(), ResultSummary(*b).median, b->config.placement.n_cpu_moe,
                    b->config.threads));
  }
  Out(fmt::format(
      "- {} configurations measured in {} engine processes with {} model loads; {} failed\n",
      run.results.size(), run.invocations.size(), run.TotalModelLoads(), run.FailureCount()));
  Out("- on this CPU-only engine every layer runs on the CPU, so --n-cpu-moe changes only where "
      "the\n"
      "  buffers live; with a CUDA engine the same commands measure the real GPU/CPU split\n");
  Out(fmt::format("- demo finished in {:.1f} s\n", wall));
  return run.FailureCount() == 0 ? kExitOk : kExitError;
}

}  // namespace

void RegisterDemoCommand(CLI::App& app, CommandRun* run) {
  auto a = std::make_shared<DemoArgs>();
  auto* cmd = app.add_subcommand(
      "demo", "Synthesize a small MoE model, plan it and benchmark it with the real engine");
  cmd->add_option("--dir", a->dir, "Working folder for the demo's files (default .moetune/demo)");
  cmd->add_option("--llama-dir", a->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  cmd->add_option("--preset", a->preset, "Model shape to synthesize (default qwen3moe)")
      ->check(Parses(SynthPreset, "PRESET"));
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per test (default 3)")
      ->check(IntRange(1, kMaxRepetitions));
  cmd->callback([a, run] { *run = [a] { return Run(*a); }; });
}

}  // namespace moetune
