// `moetune tune MODEL --ctx C`: the fastest safe configuration for this model,
// machine and workload, measured with the real engine (or the simulated one),
// with every decision explained (src/tune/tuner.h).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "cli/bench_sim.h"
#include "cli/command.h"
#include "cli/model_argument.h"
#include "cli/quiet_machine.h"
#include "cli/tune_engine.h"
#include "cli/tune_output.h"
#include "cli/validators.h"
#include "model/model_info.h"
#include "tune/tune_job.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {
namespace {

struct TuneArgs {
  std::string model;
  std::string ctx;
  std::string workload = "chat";
  double budget_minutes = 20;
  std::string journal;
  bool no_journal = false;
  bool json = false;
  std::string output;
  bool force = false;
  std::string llama_dir;
  std::string rpc;  // --rpc HOST:PORT[,...]: the devices of ggml-rpc-servers
  std::string threads;
  double wait_quiet = 0;  // --wait-quiet[=SECONDS]
  int repetitions = 3;
  bool progress = false;
  bool no_progress = false;
  bool proven_edge = false;
  SimBenchOptions sim;  // --engine, --seed and the what-if machine flags
  std::string report;
  std::string emit;
};

// The live progress line on stderr.
void PrintProgress(const TuneProgress& p) {
  const double left = std::max(0.0, p.budget_seconds - p.elapsed_seconds);
  std::cerr << fmt::format(
                   "\r\033[K[{}] {} measured{}, {:.0f} s elapsed, at most {:.0f} s left  {}",
                   TunePhaseName(p.phase), p.measured,
                   p.resumed ? fmt::format(" + {} resumed", p.resumed) : "", p.elapsed_seconds,
                   left, p.current)
            << std::flush;
}

int Run(const TuneArgs& a) {
  const bool sim = a.sim.engine == "sim";
  if (!sim && HasWhatIfMachine(a.sim.machine)) {
    std::cerr << "moetune: error: --machine, --gpu-bw, --pcie-bw, --ram-bw, --cpu and --spill "
                 "describe a what-if machine: add --engine sim\n";
    return kExitUsage;
  }
  if (sim && (!a.rpc.empty() || SeveralDevices(a.sim.machine.gpu))) {
    std::cerr << "moetune: error: --rpc and --vram lists name the real engine's devices; a "
                 "what-if machine with several devices is --machine A,B,... (e.g. "
                 "rtx3090-24g,rtx3060-12g,ddr4-3200-2ch,8c16t)\n";
    return kExitUsage;
  }
  auto m = LoadModelInfo(a.model);
  if (!m.ok()) return ReportError(m.error());

  // Step 0: the engine and the machine, checked first.
  auto te =
      sim ? SimTuneEngine(a.sim) : RealTuneEngine(a.llama_dir, a.force, a.sim.machine.gpu, a.rpc);
  if (!te.ok()) return ReportError(te.error());
  TuneMachine& machine = te->machine;
  // The GPU budget and where each figure came from, said first.
  machine.notes.insert(machine.notes.begin(), GpuBudgetText(te->gpu));
  // A busy machine is a finding of the checks (the report shows it).
  if (!sim) {
    if (auto busy = CheckQuietMachine(a.wait_quiet)) {
      std::cerr << ForTerminal("moetune: WARNING: " + *busy + "\n");
      machine.checks.push_back("warning: " + *busy);
    }
  }

  TuneJobRequest q;
  q.model_path = a.model;
  q.model = &*m;
  q.ctx = *ParseTokenCount(a.ctx);
  q.workload = *ParseWorkload(a.workload);
  q.budget_seconds = a.budget_minutes * 60;
  q.repetitions = a.repetitions;
  q.proven_edge = a.proven_edge;
  if (!a.threads.empty()) q.threads = *ParseIntList(a.threads);
  if (!a.no_journal) {
    q.journal_path = a.journal.empty() ? DefaultTuneJournalPath(a.model, q.ctx, q.workload.name,
                                                                te->journal_suffix)
                                       : a.journal;
  }
  q.reproduce = {fmt::format("moetune tune {} --ctx {} --workload {}{}{}{}", a.model, a.ctx,
                             a.workload, a.proven_edge ? " --proven-edge" : "",
                             sim ? "" : GpuBudgetFlagsText(a.sim.machine.gpu), te->reproduce)};
  const bool live = !a.no_progress && (a.progress || ::isatty(2));
  TuneJobHooks hooks;
  hooks.before_measuring = [](const std::vector<std::string>& notes) {
    for (const auto& n : notes) std::cerr << ForTerminal("moetune: note: " + n + "\n");
  };
  if (live) hooks.progress = PrintProgress;
  auto job = RunTuneJob(q, machine, *te->engine, hooks);
  if (live) std::cerr << "\n";
  if (!job.ok()) return ReportError(job.error());
  if (auto note = BusyResultsNote(job->report.result.measurements))
    job->report.result.notes.push_back(*note);
  const int rc = WriteTuneOutputs(job->report, {a.report, a.emit, a.json, a.output}, {a.model});
  if (job->journal_error) {
    // The result stands, but a rerun would measure these again: the exit
    // code says that not everything was saved.
    ReportError(*job->journal_error);
    return rc == kExitOk ? kExitError : rc;
  }
  return rc;
}

}  // namespace

void RegisterTuneCommand(CLI::App& app, CommandRun* run) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand(
      "tune", "Find the fastest safe configuration for a model, this machine and a workload");
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--ctx,-c", a->ctx, "Context length you will run with (e.g. 32K)")
      ->required()
      ->check(TokenCount(256, int64_t{1} << 22));
  cmd->add_option("--workload", a->workload,
                  "chat (1024:384), agent (8192:256) or PROMPT:ANSWER tokens")
      ->check(WorkloadName())
      ->capture_default_str();
  cmd->add_option("--budget", a->budget_minutes,
                  "Time budget in minutes (best so far when it ends)")
      ->check(NumberRange(0.1, 10080.0))
      ->capture_default_str();
  cmd->add_option("--journal", a->journal,
                  "Journal file (default: ~/.cache/moetune/tune/<model>-<ctx>-<workload>.journal)");
  cmd->add_flag("--no-journal", a->no_journal, "Do not keep a journal");
  cmd->add_option("-t,--threads", a->threads, "Thread counts to try (default: from the topology)")
      ->check(IntList(1, 4096, 64));
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per measurement")
      ->check(CLI::Range(2, 50))
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "Tune even when a critical check fails");
  AddWaitQuietFlag(cmd, &a->wait_quiet);
  cmd->add_flag("--proven-edge", a->proven_edge,
                "Take the edge when it was measured healthy at the target context instead of "
                "one layer more conservative (the output says what the step back costs)");
  AddSimBenchFlags(cmd, &a->sim, /*with_vram=*/false);
  AddGpuBudgetFlags(cmd, &a->sim.machine.gpu, /*device_lists=*/true);
  cmd->add_option("--rpc", a->rpc,
                  "Tune across the devices of these RPC servers (HOST:PORT[,...], "
                  "ggml-rpc-server), with --vram giving one size per server")
      ->check(RpcServerList());
  cmd->add_option("--llama-dir", a->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  cmd->add_flag("--json", a->json, "Print JSON (fields in docs/cli.md)");
  cmd->add_option("-o,--output", a->output, "Write to this file instead of stdout");
  AddTuneOutputOptions(cmd, &a->report, &a->emit);
  cmd->add_flag("--progress", a->progress, "Progress line on stderr even when not a terminal");
  cmd->add_flag("--no-progress", a->no_progress, "No progress line");
  cmd->callback([a, run] { *run = WithModel(&a->model, [a] { return Run(*a); }); });
}

}  // namespace moetune
