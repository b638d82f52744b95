// moetune demo: the main job end to end on any machine, in a few minutes on
// two cores: find the engine, synthesize a small MoE model, plan it for a
// pretend small GPU, check llama.cpp's own memory dry run, benchmark a few
// configurations with the real llama-bench, summarize what it found, and end
// with a tune of the model on a simulated GPU machine and with the real engine
// on this CPU, side by side.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "cli/machine_flags.h"
#include "cli/validators.h"
#include "config/server_config.h"
#include "engine/engine_info.h"
#include "engine/fit_params.h"
#include "engine/llama_bench.h"
#include "model/model_info.h"
#include "model/synth.h"
#include "report/bench_report.h"
#include "report/engine_report.h"
#include "util/json_parse.h"
#include "util/subprocess.h"
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

// One `moetune tune --json` run of the demo's last step.
struct DemoTune {
  std::string label;
  std::vector<std::string> argv;  // after `moetune`
  nlohmann::json result;
};

// Runs `moetune tune` (this binary) as a user would; its failure is the demo's.
Status RunDemoTune(const std::string& self, DemoTune* t) {
  RunOptions o;
  o.spawn.argv = {self};
  o.spawn.argv.insert(o.spawn.argv.end(), t->argv.begin(), t->argv.end());
  o.timeout = std::chrono::milliseconds(900000);
  auto out = RunProcess(o);
  if (!out.ok()) return out.error().Context("demo: the " + t->label + " tune");
  t->result = ParseJsonOrDiscarded(out->stdout_text);
  if (!out->status.success() || t->result.is_discarded() || !t->result.contains("pick") ||
      !t->result["pick"].is_object() || !t->result.contains("command")) {
    // The tune's own words: its last line that is not CLI11's "--help" hint.
    std::string why = out->status.Describe();
    for (auto it = out->stderr_tail.rbegin(); it != out->stderr_tail.rend(); ++it) {
      if (!it->empty() && it->find("Run with --help") == std::string::npos) {
        why = *it;
        break;
      }
    }
    return Error(ErrorKind::kInternal, fmt::format("demo: the {} tune failed ({}): {}", t->label,
                                                   out->status.Describe(), why));
  }
  return OkStatus();
}

std::string Speedup(const nlohmann::json& v, const char* key) {
  return v.is_object() && v.contains(key) && v[key].is_number()
             ? fmt::format("{:.2f}x", v[key].get<double>())
             : std::string("-");
}

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
  bool rewrite = false;
  if (fs::exists(model)) {
    if (auto cached = LoadModelInfo(model); !cached.ok()) {
      Out(fmt::format("(the cached {} is unusable: {}; writing it again)\n", model,
                      cached.error().message()));
      rewrite = true;
    }
  }
  if (rewrite || !fs::exists(model)) {
    // The cached file just read is an input of this command (util/command_files.h),
    // never written over: the new model is written beside it, then takes its place.
    const std::string fresh = rewrite ? model + ".new" : model;
    auto s = WriteSynthModel(sopt, fresh);
    if (!s.ok()) return ReportError(s.error());
    if (rewrite) {
      fs::rename(fresh, model, ec);
      if (ec) {
        fs::remove(fresh, ec);
        return ReportError(Error(
            ErrorKind::kIo, fmt::format("cannot replace the cached {}: {}", model, ec.message())));
      }
    }
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
    const auto j = ParseJsonOrDiscarded(out->stdout_text);
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
    WeightPlacement placement;
    placement.has_device = true;
    placement.n_gpu_layers = 99;
    placement.n_cpu_moe = n;
    ContextParams ctx;
    ctx.n_ctx = 4096;
    auto fit = RunFitParams(*info, PlannedConfig(model, placement, ctx, /*moe=*/true));
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
  if (run.FailureCount() > 0) {
    Out(fmt::format("- demo finished in {:.1f} s\n", wall));
    return kExitError;
  }

  Step(7, "Tune: a simulated GPU machine and the real CPU engine, side by side");
  // The same model and workload twice: on a what-if GPU machine through the
  // speed model (seconds), and with the real llama.cpp on this CPU (a tight
  // budget). Each keeps a journal in the demo folder, so a second demo resumes.
  const std::vector<std::string> common = {"tune",       model,    "--ctx",  "1024",
                                           "--workload", "256:64", "--json", "--no-progress"};
  DemoTune sim{"simulated", common, {}};
  sim.argv.insert(sim.argv.end(), {"--engine", "sim", "--machine", a.sim_machine, "--journal",
                                   (fs::path(a.dir) / "tune-sim.journal").string()});
  DemoTune real{"real CPU", common, {}};
  real.argv.insert(real.argv.end(), {"--budget", fmt::format("{}", a.tune_budget), "-r", "2",
                                     "--journal", (fs::path(a.dir) / "tune-cpu.journal").string()});
  if (!a.llama_dir.empty()) real.argv.insert(real.argv.end(), {"--llama-dir", a.llama_dir});
  for (DemoTune* t : {&sim, &real}) {
    std::string line = "$ moetune";
    for (const auto& x : t->argv) line += " " + x;
    Out(line + "\n");
    if (auto st = RunDemoTune(self, t); !st.ok()) return ReportError(st.error());
  }
  std::cout << "\n| | simulated GPU machine | real llama.cpp on this CPU |\n|---|---|---|\n";
  auto row = [&](const std::string& name, auto&& cell) {
    Out(fmt::format("| {} | {} | {} |\n", name, cell(sim.result), cell(real.result)));
  };
  row("machine", [](const nlohmann::json& j) { return j.value("machine", std::string()); });
  row("--n-cpu-moe", [](const nlohmann::json& j) {
    // Without a GPU the pick writes no --n-cpu-moe: every layer is on the host (-ngl 0).
    const int n = j["pick"].value("n_cpu_moe", -1);
    return (n >= 0 ? std::to_string(n) : std::string("none, -ngl 0")) +
           (j.value("placement_tuned", true) ? "" : " (no GPU: not measured)");
  });
  row("-t", [](const nlohmann::json& j) { return std::to_string(j["pick"].value("threads", 0)); });
  row("-ub",
      [](const nlohmann::json& j) { return std::to_string(j["pick"].value("n_ubatch", 0)); });
  row("-fa", [](const nlohmann::json& j) { return j["pick"].value("flash_attn", std::string()); });
  row("load mode", [](const nlohmann::json& j) {
    return j["pick"].value("load_mode", std::string()) == "none"
               ? std::string("read into RAM (-lm none)")
               : std::string("memory-mapped");
  });
  row("vs llama.cpp defaults (empty context)", [](const nlohmann::json& j) {
    return Speedup(j.value("versus_defaults", nlohmann::json()), "speedup_depth0");
  });
  row("vs llama.cpp defaults (full context)", [](const nlohmann::json& j) {
    return Speedup(j.value("versus_defaults", nlohmann::json()), "speedup_at_ctx");
  });
  row("measured (resumed)", [](const nlohmann::json& j) {
    return fmt::format("{} ({})", j.value("measured", 0), j.value("resumed", 0));
  });
  for (const DemoTune* t : {&sim, &real}) {
    std::string cmd;
    for (const auto& x : t->result["command"])
      cmd += (cmd.empty() ? "" : " ") + x.get<std::string>();
    Out(fmt::format("\n{} pick:\n    {}\n", t->label, cmd));
  }
  std::cout << fmt::format(
      "\ntune step: simulated --n-cpu-moe {} -t {}; real --n-cpu-moe {} -t {}\n",
      sim.result["pick"].value("n_cpu_moe", -1), sim.result["pick"].value("threads", -1),
      real.result["pick"].value("n_cpu_moe", -1), real.result["pick"].value("threads", -1));
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << fmt::format("- demo finished in {:.1f} s\n", total);
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
