// moetune bench: measure configurations with the real llama-bench (comma lists
// sweep; configurations that share model parameters share one model load).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/bench_sim.h"
#include "cli/command.h"
#include "cli/model_argument.h"
#include "cli/quiet_machine.h"
#include "cli/report_output.h"
#include "cli/validators.h"
#include "config/tensor_override.h"
#include "engine/engine_info.h"
#include "engine/llama_bench.h"
#include "engine/rpc_host.h"
#include "report/bench_report.h"
#include "report/command_documents.h"
#include "tune/analysis.h"
#include "util/subprocess.h"
#include "util/utf8.h"

namespace moetune {
namespace {

struct BenchArgs {
  std::string model;
  double wait_quiet = 0;  // --wait-quiet[=SECONDS]
  std::string llama_dir;
  std::string threads;
  std::string ngl = "99";
  std::string ncmoe = "0";
  std::string ot;
  std::string ubatch = "512";
  std::string batch = "2048";
  std::string depth = "0";
  std::string n_prompt = "512";
  std::string n_gen = "128";
  std::string flash_attn;
  std::string type_k = "f16";
  std::string type_v = "f16";
  std::string load_mode;
  std::string rpc;
  int repetitions = 5;
  bool no_warmup = false;
  double timeout = 600;
  bool json = false;
  std::string output;
  std::string report;
  bool progress = false;
  bool no_progress = false;
  bool dry_run = false;
  bool verbose = false;
  SimBenchOptions sim;
};

// The axes of a sweep, parsed and checked: every list a configuration is
// drawn from, and what all configurations share.
struct SweepAxes {
  std::vector<int> threads, ngl, ncmoe, ubatch, batch, depth;
  std::vector<FlashAttn> flash_attn;
  std::vector<uint32_t> type_k, type_v;
  std::vector<std::pair<int, int>> tests;  // (prompt, generation), one of them 0
  LoadMode load_mode = LoadMode::kDefault;
  Placement rules;
  std::vector<std::string> rpc;
};

Result<std::vector<uint32_t>> KvTypes(const std::string& text, const char* flag) {
  std::vector<uint32_t> out;
  for (const auto& name : SplitList(text)) {
    const auto type = GgmlTypeByName(name);
    if (!type) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("{}: '{}' is not a ggml type (f16, q8_0, q4_0, ...)", flag, name));
    }
    out.push_back(type->id);
  }
  return out;
}

Result<SweepAxes> ParseSweepAxes(const BenchArgs& a) {
  auto list = [](const std::string& text, const char* flag) -> Result<std::vector<int>> {
    auto r = ParseIntList(text);
    if (!r.ok()) return r.take_error().Context(flag);
    return r;
  };
  SweepAxes x;
  const std::string threads =
      a.threads.empty() ? std::to_string(std::max(1u, std::thread::hardware_concurrency()))
                        : a.threads;
  MOETUNE_ASSIGN_OR_RETURN(x.threads, list(threads, "--threads"));
  MOETUNE_ASSIGN_OR_RETURN(x.ngl, list(a.ngl, "--ngl"));
  MOETUNE_ASSIGN_OR_RETURN(x.ncmoe, list(a.ncmoe, "--ncmoe"));
  MOETUNE_ASSIGN_OR_RETURN(x.ubatch, list(a.ubatch, "--ubatch"));
  MOETUNE_ASSIGN_OR_RETURN(x.batch, list(a.batch, "--batch"));
  MOETUNE_ASSIGN_OR_RETURN(x.depth, list(a.depth, "--depth"));
  MOETUNE_ASSIGN_OR_RETURN(auto p, list(a.n_prompt, "--n-prompt"));
  MOETUNE_ASSIGN_OR_RETURN(auto n, list(a.n_gen, "--n-gen"));
  for (const auto& v : SplitList(a.flash_attn)) {
    auto normal = ParseFlashAttn(v);
    if (!normal.ok()) return normal.take_error().Context("--flash-attn");
    x.flash_attn.push_back(*normal);
  }
  MOETUNE_ASSIGN_OR_RETURN(x.type_k, KvTypes(a.type_k, "--cache-type-k"));
  MOETUNE_ASSIGN_OR_RETURN(x.type_v, KvTypes(a.type_v, "--cache-type-v"));
  MOETUNE_ASSIGN_OR_RETURN(x.load_mode, ParseLoadMode(a.load_mode));
  // Rules that cannot reach llama-bench intact are a command-line error now,
  // not a failed run later.
  if (auto st = x.rules.SetOverrideTensor(a.ot); !st.ok()) {
    return st.error().Context("--override-tensor");
  } else if (auto value = OverridesForBench(x.rules.Rules()); !value.ok()) {
    return value.take_error().Context("--override-tensor");
  }
  MOETUNE_ASSIGN_OR_RETURN(x.rpc, ParseRpcList(a.rpc));
  for (int v : p) {
    if (v > 0) x.tests.push_back({v, 0});
  }
  for (int v : n) {
    if (v > 0) x.tests.push_back({0, v});
  }
  if (x.tests.empty()) {
    return Error(ErrorKind::kInvalidArgument,
                 "nothing to measure: give --n-prompt and/or --n-gen values above 0");
  }
  return x;
}

// One configuration of the sweep.
RunConfig SweepConfig(const BenchArgs& a, const SweepAxes& x) {
  RunConfig c;
  c.model = a.model;
  c.placement.fine_fill = x.rules.fine_fill;
  c.placement.overrides = x.rules.overrides;
  c.load_mode = x.load_mode;
  c.rpc = x.rpc;
  c.repetitions = a.repetitions;
  c.warmup = !a.no_warmup;
  return c;
}

Result<std::vector<RunConfig>> BuildConfigs(const BenchArgs& a) {
  MOETUNE_ASSIGN_OR_RETURN(const SweepAxes x, ParseSweepAxes(a));
  // The size of the product first: -t 1-10000 --ub 1-10000 is refused here,
  // not after a hundred million configurations were built.
  MOETUNE_ASSIGN_OR_RETURN(const uint64_t count,
                           CheckSweepSize({{"--ngl", x.ngl.size()},
                                           {"--ncmoe", x.ncmoe.size()},
                                           {"--threads", x.threads.size()},
                                           {"--ubatch", x.ubatch.size()},
                                           {"--batch", x.batch.size()},
                                           {"--depth", x.depth.size()},
                                           {"--cache-type-k", x.type_k.size()},
                                           {"--cache-type-v", x.type_v.size()},
                                           {"--flash-attn", x.flash_attn.size()},
                                           {"tests", x.tests.size()}}));
  std::vector<RunConfig> out;
  out.reserve(static_cast<std::size_t>(count));
  RunConfig c = SweepConfig(a, x);
  // Placement outermost so that configurations sharing a model load are adjacent.
  for (int g : x.ngl) {
    c.placement.n_gpu_layers = g;
    for (int m : x.ncmoe) {
      c.placement.n_cpu_moe = m;
      for (int th : x.threads) {
        c.threads = th;
        for (int u : x.ubatch) {
          c.n_ubatch = u;
          for (int bb : x.batch) {
            c.n_batch = bb;
            for (int dd : x.depth) {
              c.n_depth = dd;
              for (uint32_t k : x.type_k) {
                c.type_k = k;
                for (uint32_t v : x.type_v) {
                  c.type_v = v;
                  for (FlashAttn f : x.flash_attn) {
                    c.flash_attn = f;
                    for (auto [pp, tg] : x.tests) {
                      c.n_prompt = pp;
                      c.n_gen = tg;
                      out.push_back(c);
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

int Run(const BenchArgs& a) {
  auto configs = BuildConfigs(a);
  if (!configs.ok()) {
    // Every BuildConfigs error is about the command line.
    ReportError(configs.error());
    return kExitUsage;
  }
  if (a.sim.engine == "sim")
    return RunSimBench(*configs, a.sim, a.json, a.output, a.threads.empty(), a.report);
  DiscoveryOptions dopt;
  dopt.llama_dir = a.llama_dir;
  auto info = DiscoverEngine(dopt);
  if (!info.ok()) return ReportError(info.error());
  for (const auto& w : info->warnings) std::cerr << ForTerminal("moetune: WARNING: " + w + "\n");

  LlamaBenchOptions opt;
  opt.timeout_per_test = std::chrono::milliseconds(static_cast<int64_t>(a.timeout * 1000));
  if (a.verbose) {
    opt.on_engine_line = [](std::string_view l) {
      std::cerr << ForTerminal("  | " + std::string(l) + "\n");
    };
  }
  LlamaBenchEngine engine(*info, opt);
  // The model is an input: `-o MODEL.gguf` is refused, never written over.
  const std::vector<std::string> inputs = {a.model};
  if (a.dry_run) {
    auto st = WriteOutput(a.output, InvocationLines(engine, *configs), inputs);
    return st.ok() ? kExitOk : ReportError(st.error());
  }

  // A host that does not answer is named now, not after the engine waited on it.
  if (auto st = CheckRpcHosts(configs->front().rpc); !st.ok()) return ReportError(st.error());
  if (auto busy = CheckQuietMachine(a.wait_quiet))
    std::cerr << ForTerminal("moetune: WARNING: " + *busy + "\n");
  const bool live = !a.no_progress && (a.progress || ::isatty(2));
  const ProgressCallback progress = live ? TerminalProgress() : ProgressCallback();
  const auto t0 = std::chrono::steady_clock::now();
  BenchRun run = engine.Run(*configs, progress);
  if (auto note = BusyResultsNote(run.results))
    std::cerr << ForTerminal("moetune: note: " + *note + "\n");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (live) std::cerr << "\n";

  std::string text;
  if (a.json) {
    text = JsonOutput(BenchRunToJson(run, *info, wall));
  } else {
    text = FormatBenchMarkdown(run);
    for (const auto& r : run.results) {
      if (!r.ok()) continue;
      const auto& c = r.config;
      const std::string label =
          fmt::format("{} t={} ngl={} ncmoe={} ub={}", c.test_name(), c.threads,
                      c.placement.n_gpu_layers, c.placement.n_cpu_moe, c.n_ubatch);
      for (const auto& w : SummaryWarnings(ResultSummary(r), label)) {
        std::cerr << ForTerminal("moetune: note: " + w + "\n");
      }
    }
  }
  if (auto st = WriteOutput(a.output, text, inputs); !st.ok()) return ReportError(st.error());
  if (!a.report.empty()) {
    // The reading of the sweep (N curve, threads, micro-batch) the report draws.
    const Analysis analysis = Analyze(run.results, AnalysisOptions{});
    auto st = WriteReportFile(a.report, BenchDocument(run, analysis, *info, wall, OwnCommandLine()),
                              {a.model});
    if (!st.ok()) return ReportError(st.error());
  }
  if (run.FailureCount() > 0) {
    std::cerr << fmt::format("moetune: {} of {} configuration(s) failed (see the table)\n",
                             run.FailureCount(), run.results.size());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace

void RegisterBenchCommand(CLI::App& app, CommandRun* run) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench", "Measure configurations with the real llama-bench (comma lists sweep)");
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--llama-dir", a->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  // Lists may hold up to kMaxSweepConfigs values each, so that a product too
  // large is refused by CheckSweepSize with the count and the limit.
  constexpr int kItems = static_cast<int>(kMaxSweepConfigs);
  cmd->add_option("-t,--threads", a->threads, "Threads, list/range (default: all logical CPUs)")
      ->check(IntList(1, kMaxThreads, kItems));
  cmd->add_option("--ngl,--n-gpu-layers", a->ngl, "GPU layers, list (default 99)")
      ->check(IntList(0, kMaxGpuLayers, kItems));
  cmd->add_option("--ncmoe,--n-cpu-moe", a->ncmoe,
                  "Layers whose experts stay on the CPU, list (default 0)")
      ->check(IntList(0, kMaxGpuLayers, kItems));
  cmd->add_option("--ot,--override-tensor", a->ot,
                  "Tensor overrides pattern=BUFT[,...] for every configuration (commas inside "
                  "a regex, as in {1,3}, belong to the pattern)");
  cmd->add_option("--ub,--ubatch", a->ubatch, "Micro-batch sizes, list (default 512)")
      ->check(IntList(1, kMaxBatch, kItems));
  cmd->add_option("-b,--batch", a->batch, "Batch sizes, list (default 2048)")
      ->check(IntList(1, kMaxBatch, kItems));
  cmd->add_option("-d,--depth", a->depth, "Context depths before the test, list (default 0)")
      ->check(IntList(0, kMaxTokens, kItems));
  cmd->add_option("-p,--n-prompt", a->n_prompt, "Prefill test sizes, list (default 512; 0 = none)")
      ->check(IntList(0, kMaxTokens, kItems));
  cmd->add_option("-n,--n-gen", a->n_gen, "Decode test sizes, list (default 128; 0 = none)")
      ->check(IntList(0, kMaxTokens, kItems));
  cmd->add_option("--fa,--flash-attn", a->flash_attn,
                  "on|off|auto (or 1|0|-1), list (default: the engine's)")
      ->check(FlashAttnList());
  cmd->add_option("--ctk,--cache-type-k", a->type_k, "K cache types, list (default f16)")
      ->check(KvCacheType(/*list=*/true));
  cmd->add_option("--ctv,--cache-type-v", a->type_v, "V cache types, list (default f16)")
      ->check(KvCacheType(/*list=*/true));
  cmd->add_option("--lm,--load-mode", a->load_mode, "Load mode (engines with -lm)");
  cmd->add_option("--rpc", a->rpc,
                  fmt::format("RPC servers HOST:PORT[,...] (ggml-rpc-server) whose devices the "
                              "engine uses; each must answer within {} s before the runs start "
                              "(docs/distributed.md)",
                              kRpcCheckTimeout.count() / 1000))
      ->check(RpcServerList());
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per test (default 5)")
      ->check(IntRange(1, kMaxRepetitions));
  cmd->add_flag("--no-warmup", a->no_warmup, "Skip the warm-up run");
  cmd->add_option("--timeout", a->timeout, "Seconds allowed per test (default 600)")
      ->check(Seconds(1, kMaxTimeoutSeconds));
  cmd->add_flag("--json", a->json, "JSON output (see docs/cli.md)");
  cmd->add_option("-o,--output", a->output, "Write the output to this file instead of stdout");
  cmd->add_option("--report", a->report,
                  "Also write a report: FILE.html (self-contained, with charts) or FILE.md")
      ->check(ReportPathValidator());
  cmd->add_flag("--progress", a->progress,
                "Live progress line on stderr even when it is not a terminal");
  cmd->add_flag("--no-progress", a->no_progress, "No live progress line");
  AddWaitQuietFlag(cmd, &a->wait_quiet);
  cmd->add_flag("--dry-run", a->dry_run,
                "Print the llama-bench command lines without running them");
  cmd->add_flag("-v,--verbose", a->verbose, "Echo the engine's log on stderr");
  AddSimBenchFlags(cmd, &a->sim);
  cmd->callback([a, run] { *run = WithModel(&a->model, [a] { return Run(*a); }); });
}

}  // namespace moetune
