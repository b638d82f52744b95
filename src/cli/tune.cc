// `moetune tune MODEL --ctx C`: the fastest safe configuration for this model,
// machine and workload, measured with the real engine (or the simulated one),
// with every decision explained (src/tune/tuner.h).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/command.h"
#include "cli/tune_output.h"
#include "cli/validators.h"
#include "engine/engine_info.h"
#include "engine/llama_bench.h"
#include "hw/cpu_topology.h"
#include "hw/doctor.h"
#include "model/model_info.h"
#include "report/tune_report.h"
#include "tune/journal.h"
#include "tune/space.h"
#include "tune/tuner.h"
#include "util/units.h"

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
  std::string vram;
  std::string reserve = "0";
  std::string threads;
  int repetitions = 3;
  bool progress = false;
  bool no_progress = false;
  std::string report;
  std::string emit;
};

std::string ModelFingerprint(const ModelInfo& m) {
  return fmt::format("{} ({}, {} tensors, {} bytes of tensors)", m.arch.hp.name, m.arch.hp.arch,
                     m.gguf.tensors.size(), m.weights.total);
}

std::string MachineFingerprint(const CpuTopology& cpu) {
  return fmt::format("{} ({} logical CPUs, {} physical cores)", cpu.model_name, cpu.logical_cpus,
                     cpu.allowed_physical_cores);
}

// $XDG_CACHE_HOME/moetune/tune/<model>-<ctx>-<workload>.journal (or ~/.cache/...).
std::string DefaultJournalPath(const std::string& model, int64_t ctx, const std::string& workload) {
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    base = x;
  } else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    base = std::string(h) + "/.cache";
  } else {
    return "";
  }
  std::string stem = std::filesystem::path(model).stem().string();
  std::string safe_workload = workload;
  std::replace(safe_workload.begin(), safe_workload.end(), ':', '-');
  return fmt::format("{}/moetune/tune/{}-{}-{}.journal", base, stem, ctx, safe_workload);
}

std::vector<std::string> TunedServerArgs(const TuneReport& t, const RunConfig& b) {
  std::vector<std::string> a = {"llama-server", "-m", t.model_path};
  a.insert(a.end(), {"-ngl", std::to_string(b.placement.n_gpu_layers)});
  if (!b.placement.override_tensor.empty()) a.insert(a.end(), {"-ot", b.placement.override_tensor});
  if (b.placement.n_cpu_moe > 0)
    a.insert(a.end(), {"--n-cpu-moe", std::to_string(b.placement.n_cpu_moe)});
  a.insert(a.end(),
           {"-c", std::to_string(t.ctx), "-t", std::to_string(b.threads), "-ub",
            std::to_string(b.placement.n_ubatch), "-b", std::to_string(b.placement.n_batch)});
  if (!b.placement.flash_attn.empty()) a.insert(a.end(), {"-fa", b.placement.flash_attn});
  if (b.placement.type_k != "f16") a.insert(a.end(), {"-ctk", b.placement.type_k});
  if (b.placement.type_v != "f16") a.insert(a.end(), {"-ctv", b.placement.type_v});
  // llama-server 0.7.0 has no --no-mmap; -lm takes llama-bench's load modes.
  if (!b.load_mode.empty()) a.insert(a.end(), {"-lm", b.load_mode});
  a.insert(a.end(), {"-np", "1", "-fit", "off"});
  return a;
}

int Run(const TuneArgs& a) {
  const int64_t ctx = *ParseTokenCount(a.ctx);  // validated
  const Workload workload = *ParseWorkload(a.workload);
  auto m = LoadModelInfo(a.model);
  if (!m.ok()) return ReportError(m.error());

  // Step 0: the engine and the machine, checked first.
  DiscoveryOptions dopt;
  dopt.llama_dir = a.llama_dir;
  auto info = DiscoverEngine(dopt);
  if (!info.ok()) return ReportError(info.error());
  DoctorOptions d;
  d.measure_bandwidth = false;
  d.env = CurrentEnvironment();
  d.engine = EngineProbeFromInfo(*info);
  const DoctorReport doctor = RunDoctor(d);
  TuneReport report;
  report.model_path = a.model;
  report.model_name = m->arch.hp.name;
  report.ctx = ctx;
  report.workload = workload;
  report.engine = info->version_line.empty() ? info->dir : info->version_line + " at " + info->dir;
  report.machine = MachineFingerprint(doctor.profile.cpu);
  bool critical = false;
  for (const auto& v : doctor.verdicts) {
    if (v.severity == "info") continue;
    report.checks.push_back(
        fmt::format("{}: {}: {} Fix: {}", v.severity, v.title, v.detail, v.fix));
    critical = critical || v.severity == "critical";
  }
  for (const auto& w : info->warnings) report.checks.push_back("engine: " + w);
  if (critical && !a.force) {
    for (const auto& c : report.checks) std::cerr << "moetune: " << c << "\n";
    return ReportError(Error(ErrorKind::kInvalidArgument,
                             "a critical check failed (above); fix it first, or pass --force to "
                             "tune anyway"));
  }

  // What is known before measuring: the memory plan and the CPU.
  const bool engine_has_gpu = !info->devices.empty();
  SpaceInputs in;
  in.model = &*m;
  in.engine_has_gpu = engine_has_gpu;
  in.cpu = &doctor.profile.cpu;
  if (!a.threads.empty()) in.threads_override = *ParseIntList(a.threads);
  int64_t vram = 0;
  if (!a.vram.empty()) {
    vram = ParseBytes(a.vram)->count();
  } else {
    vram = doctor.profile.TotalFreeVramBytes();
  }
  if (vram > 0) {
    PlanRequest req;
    req.vram_free = vram;
    req.reserve = ParseBytes(a.reserve)->count();
    req.ctx.n_ctx = ctx;
    in.plan = req;
    report.vram_budget = vram - req.reserve;
    report.reserve = req.reserve;
  }
  std::vector<std::string> notes;
  TuneSpace space = BuildTuneSpace(in, &notes);

  // The journal: resume what an earlier run measured.
  std::unique_ptr<Journal> journal;
  std::string journal_path =
      a.no_journal
          ? ""
          : (a.journal.empty() ? DefaultJournalPath(a.model, ctx, workload.name) : a.journal);
  if (!journal_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(journal_path).parent_path(), ec);
    JournalIdentity id{ModelFingerprint(*m), report.engine, report.machine};
    auto j = Journal::Open(journal_path, id, &notes);
    if (!j.ok()) return ReportError(j.error());
    journal = std::move(j).value();
    report.journal = journal_path;
  }

  LlamaBenchOptions lopt;
  LlamaBenchEngine engine(*info, lopt);
  TuneOptions opt;
  opt.ctx = ctx;
  opt.workload = workload;
  opt.budget_seconds = a.budget_minutes * 60;
  opt.repetitions = a.repetitions;
  const bool live = !a.no_progress && (a.progress || ::isatty(2));
  Tuner::ProgressFn progress;
  if (live) {
    progress = [](const TuneProgress& p) {
      const double left = std::max(0.0, p.budget_seconds - p.elapsed_seconds);
      std::cerr << fmt::format(
                       "\r\033[K[{}] {} measured{}, {:.0f} s elapsed, at most {:.0f} s "
                       "left  {}",
                       p.phase, p.measured,
                       p.resumed ? fmt::format(" + {} resumed", p.resumed) : "", p.elapsed_seconds,
                       left, p.current)
                << std::flush;
    };
  }
  for (const auto& n : notes) std::cerr << "moetune: note: " << n << "\n";
  Tuner tuner(engine, space, opt, journal.get(), progress);
  report.result = tuner.Run();
  if (live) std::cerr << "\n";
  report.result.notes.insert(report.result.notes.begin(), notes.begin(), notes.end());
  if (in.plan) {
    auto p = PlanPlacement(m->gguf, m->arch, m->weights, *in.plan);
    if (p.ok()) {
      for (const auto& o : p->options) {
        if (o.n_cpu_moe == report.result.best.placement.n_cpu_moe) report.memory = o;
      }
    }
  }
  report.server_argv = TunedServerArgs(report, report.result.best);
  report.reproduce = {fmt::format("moetune tune {} --ctx {} --workload {}{}", a.model, a.ctx,
                                  a.workload, a.vram.empty() ? "" : " --vram " + a.vram)};
  return WriteTuneOutputs(report, {a.report, a.emit, a.json, a.output}, {a.model});
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
      ->check(CLI::Range(0.1, 10080.0))
      ->capture_default_str();
  cmd->add_option("--journal", a->journal,
                  "Journal file (default: ~/.cache/moetune/tune/<model>-<ctx>-<workload>.journal)");
  cmd->add_flag("--no-journal", a->no_journal, "Do not keep a journal");
  cmd->add_option("--vram", a->vram, "Free GPU memory (default: the machine's)")
      ->check(ByteSize(1, int64_t{1} << 50));
  cmd->add_option("--reserve", a->reserve, "GPU memory other programs hold or will hold")
      ->check(ByteSize(0, int64_t{1} << 50))
      ->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Thread counts to try (default: from the topology)")
      ->check(IntList(1, 4096, 64));
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per measurement")
      ->check(CLI::Range(2, 50))
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "Tune even when a critical check fails");
  cmd->add_option("--llama-dir", a->llama_dir,
                  "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, default, PATH)");
  cmd->add_flag("--json", a->json, "Print JSON (fields in docs/cli.md)");
  cmd->add_option("-o,--output", a->output, "Write to this file instead of stdout");
  AddTuneOutputOptions(cmd, &a->report, &a->emit);
  cmd->add_flag("--progress", a->progress, "Progress line on stderr even when not a terminal");
  cmd->add_flag("--no-progress", a->no_progress, "No progress line");
  cmd->callback([a, run] { *run = [a] { return Run(*a); }; });
}

}  // namespace moetune
