// `moetune tune MODEL --ctx C`: the fastest safe configuration for this model,
// machine and workload, measured with the real engine (or the simulated one),
// with every decision explained (src/tune/tuner.h).
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "cli/bench_sim.h"
#include "cli/command.h"
#include "cli/model_argument.h"
#include "cli/tune_output.h"
#include "cli/validators.h"
#include "doctor/doctor.h"
#include "engine/engine_info.h"
#include "engine/llama_bench.h"
#include "engine/sim_engine.h"
#include "hw/cpu_topology.h"
#include "model/model_info.h"
#include "report/tune_report.h"
#include "report/uncertainty_report.h"
#include "tune/journal.h"
#include "tune/space.h"
#include "tune/tuner.h"
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
  std::string vram;
  std::string reserve;  // "" = none (0, or the what-if machine's)
  std::string threads;
  int repetitions = 3;
  bool progress = false;
  bool no_progress = false;
  bool proven_edge = false;
  SimBenchOptions sim;  // --engine, --seed and the what-if machine flags
  std::string report;
  std::string emit;
};

// The hash covers every hyperparameter and tensor (gguf/gguf.h): a file of
// the same name and shape with another expert_used_count is another model.
std::string ModelFingerprint(const ModelInfo& m) {
  return fmt::format("{} ({}, {} tensors, {} bytes of tensors, {})", m.arch.hp.name, m.arch.hp.arch,
                     m.gguf.tensors.size(), m.weights.total, GgufFingerprint(m.gguf));
}

std::string MachineFingerprint(const CpuTopology& cpu) {
  return fmt::format("{} ({} logical CPUs, {} physical cores)", cpu.model_name, cpu.logical_cpus,
                     cpu.allowed_physical_cores);
}

// Every figure of a what-if machine that changes a simulated result, so that a
// journal of one machine never resumes a tune of another.
std::string MachineFingerprint(const MachineSpec& m) {
  std::string s = "SIMULATED " + m.Describe();
  if (m.accel) {
    s += fmt::format(", {} spill, reserve {} B, link {:.3g}/{:.3g} GB/s, {:.4g} TFLOPS x{}",
                     SpillModeName(m.spill), m.reserve, m.accel->link_gbps,
                     m.accel->link_pageable_gbps, m.accel->fp16_tflops, m.accel->count);
  }
  s += fmt::format(", core {:.4g} GFLOPS, E-core x{:.3g}, quota {}, RAM {} B",
                   m.cpu.core_peak_gflops, m.cpu.e_core_relative,
                   m.cpu.quota ? fmt::format("{:.3g}", *m.cpu.quota) : "none", m.ram.available);
  return s;
}

// FNV-1a, for a short tag that tells journals of different what-if machines apart.
std::string ShortHash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:08x}", static_cast<uint32_t>(h ^ (h >> 32)));
}

// $XDG_CACHE_HOME/moetune/tune/<model>-<ctx>-<workload>[-sim-<hash>].journal (or ~/.cache/...).
std::string DefaultJournalPath(const std::string& model, int64_t ctx, const std::string& workload,
                               const std::string& suffix) {
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
  return fmt::format("{}/moetune/tune/{}-{}-{}{}.journal", base, stem, ctx, safe_workload, suffix);
}

// What the tune runs on: the real engine on this machine (after the doctor's
// checks) or the simulated engine on a what-if machine.
struct TuneEngine {
  std::unique_ptr<Engine> engine;
  bool has_gpu = false;
  CpuTopology cpu;
  int64_t vram_free = 0;  // the plan's budget before the reserve (0 = unknown)
  int64_t reserve = 0;
  DeviceKind device_kind = DeviceKind::kCuda;
  JournalIdentity identity;  // model filled in by the caller
  std::string journal_suffix;
  std::string reproduce;  // the flags that select this engine and machine
  std::vector<std::string> notes;
};

// The simulated engine on the what-if machine; --vram/--reserve describe that
// machine's GPU (and so the plan's budget).
Result<TuneEngine> SimTuneEngine(const TuneArgs& a, TuneReport* report) {
  SimBenchOptions sim = a.sim;
  sim.machine.vram = a.vram;
  sim.machine.reserve = a.reserve;
  ResolvedMachine machine;
  MOETUNE_ASSIGN_OR_RETURN(SimEngineOptions so, ResolveSimEngine(sim, &machine));
  TuneEngine t;
  const MachineSpec& spec = machine.spec;
  t.has_gpu = spec.has_gpu();
  t.cpu = SimulatedCpuTopology(spec.cpu);
  if (spec.accel) {
    t.vram_free = spec.accel->vram_free;
    t.reserve = spec.reserve;
    if (spec.accel->kind == AcceleratorKind::kRpcCpu) t.device_kind = DeviceKind::kRpc;
  }
  auto engine = std::make_unique<SimEngine>(so);
  const std::string constants = machine.calibration ? fmt::format("calibrated constants ({})",
                                                                  machine.calibration->created_at)
                                                    : std::string("default constants");
  report->simulated = true;
  report->engine = fmt::format("{}; {}", engine->Info().version_line, constants);
  report->machine = "SIMULATED " + spec.Describe();
  t.notes.push_back(fmt::format(
      "SIMULATED: every measurement comes from the speed model on {} (seed {}), not from "
      "llama.cpp; the doctor's checks of this machine do not apply",
      spec.Describe(), a.sim.seed));
  // Every simulated figure is a prediction: it carries the constants' band.
  t.notes.push_back(UncertaintyText(machine.uncertainty));
  t.identity.engine = fmt::format("moetune simulated engine, seed {}, {}", a.sim.seed, constants);
  t.identity.machine = MachineFingerprint(spec);
  t.journal_suffix = "-sim-" + ShortHash(t.identity.engine + "\n" + t.identity.machine);
  t.reproduce = fmt::format(" --engine sim --seed {}", a.sim.seed);
  const MachineFlags& f = a.sim.machine;
  for (const auto& [flag, value] :
       std::vector<std::pair<const char*, std::string>>{{"--machine", f.machine},
                                                        {"--gpu-bw", f.gpu_bw},
                                                        {"--pcie-bw", f.pcie_bw},
                                                        {"--ram-bw", f.ram_bw},
                                                        {"--cpu", f.cpu},
                                                        {"--spill", f.spill},
                                                        {"--reserve", a.reserve},
                                                        {"--profile", f.profile}}) {
    if (!value.empty()) t.reproduce += fmt::format(" {} {}", flag, value);
  }
  t.engine = std::move(engine);
  return t;
}

// The real engine on this machine, after the doctor's checks (step 0): a
// critical finding stops the tune unless --force.
Result<TuneEngine> RealTuneEngine(const TuneArgs& a, TuneReport* report) {
  DiscoveryOptions dopt;
  dopt.llama_dir = a.llama_dir;
  MOETUNE_ASSIGN_OR_RETURN(EngineInfo info, DiscoverEngine(dopt));
  DoctorOptions d;
  d.measure_bandwidth = false;
  d.env = CurrentEnvironment();
  d.engine = EngineProbeFromInfo(info);
  const DoctorReport doctor = RunDoctor(d);
  report->engine = info.version_line.empty() ? info.dir : info.version_line + " at " + info.dir;
  report->machine = MachineFingerprint(doctor.profile.cpu);
  bool critical = false;
  for (const auto& v : doctor.verdicts) {
    if (v.severity == "info") continue;
    report->checks.push_back(
        fmt::format("{}: {}: {} Fix: {}", v.severity, v.title, v.detail, v.fix));
    critical = critical || v.severity == "critical";
  }
  for (const auto& w : info.warnings) report->checks.push_back("engine: " + w);
  if (critical && !a.force) {
    for (const auto& c : report->checks) std::cerr << ForTerminal("moetune: " + c + "\n");
    return Error(ErrorKind::kInvalidArgument,
                 "a critical check failed (above); fix it first, or pass --force to tune anyway");
  }
  TuneEngine t;
  t.has_gpu = !info.devices.empty();
  t.cpu = doctor.profile.cpu;
  t.vram_free = doctor.profile.TotalFreeVramBytes();
  t.identity.engine = report->engine;
  t.identity.machine = report->machine;
  LlamaBenchOptions lopt;
  t.engine = std::make_unique<LlamaBenchEngine>(info, lopt);
  return t;
}

int Run(const TuneArgs& a) {
  const int64_t ctx = *ParseTokenCount(a.ctx);  // validated
  const Workload workload = *ParseWorkload(a.workload);
  const bool sim = a.sim.engine == "sim";
  if (!sim && HasWhatIf(a.sim.machine)) {
    std::cerr << "moetune: error: --machine, --gpu-bw, --pcie-bw, --ram-bw, --cpu and --spill "
                 "describe a what-if machine: add --engine sim\n";
    return kExitUsage;
  }
  auto m = LoadModelInfo(a.model);
  if (!m.ok()) return ReportError(m.error());

  // Step 0: the engine and the machine, checked first.
  TuneReport report;
  report.model_path = a.model;
  report.model_name = m->arch.hp.name;
  report.ctx = ctx;
  report.workload = workload;
  auto te = sim ? SimTuneEngine(a, &report) : RealTuneEngine(a, &report);
  if (!te.ok()) return ReportError(te.error());

  // What is known before measuring: the memory plan and the CPU.
  SpaceInputs in;
  in.model = &*m;
  in.engine_has_gpu = te->has_gpu;
  in.cpu = &te->cpu;
  if (!a.threads.empty()) in.threads_override = *ParseIntList(a.threads);
  const int64_t vram = !sim && !a.vram.empty() ? ParseBytes(a.vram)->count() : te->vram_free;
  if (vram > 0) {
    PlanRequest req;
    req.vram_free = vram;
    req.reserve = sim ? te->reserve : ParseBytes(a.reserve.empty() ? "0" : a.reserve)->count();
    req.device_kind = te->device_kind;
    req.ctx.n_ctx = ctx;
    in.plan = req;
    report.vram_budget = vram - req.reserve;
    report.reserve = req.reserve;
  }
  std::vector<std::string> notes = te->notes;
  TuneSpace space = BuildTuneSpace(in, &notes);

  // The journal: resume what an earlier run measured.
  std::unique_ptr<Journal> journal;
  std::string journal_path =
      a.no_journal
          ? ""
          : (a.journal.empty() ? DefaultJournalPath(a.model, ctx, workload.name, te->journal_suffix)
                               : a.journal);
  if (!journal_path.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(journal_path).parent_path(), ec);
    JournalIdentity id = te->identity;
    id.model = ModelFingerprint(*m);
    auto j = Journal::Open(journal_path, id, &notes);
    if (!j.ok()) return ReportError(j.error());
    journal = std::move(j).value();
    report.journal = journal_path;
  }

  TuneOptions opt;
  opt.ctx = ctx;
  opt.workload = workload;
  opt.budget_seconds = a.budget_minutes * 60;
  opt.repetitions = a.repetitions;
  opt.take_proven_edge = a.proven_edge;
  const bool live = !a.no_progress && (a.progress || ::isatty(2));
  Tuner::ProgressFn progress;
  if (live) {
    progress = [](const TuneProgress& p) {
      const double left = std::max(0.0, p.budget_seconds - p.elapsed_seconds);
      std::cerr << fmt::format(
                       "\r\033[K[{}] {} measured{}, {:.0f} s elapsed, at most {:.0f} s "
                       "left  {}",
                       TunePhaseName(p.phase), p.measured,
                       p.resumed ? fmt::format(" + {} resumed", p.resumed) : "", p.elapsed_seconds,
                       left, p.current)
                << std::flush;
    };
  }
  for (const auto& n : notes) std::cerr << ForTerminal("moetune: note: " + n + "\n");
  Tuner tuner(*te->engine, space, opt, journal.get(), progress);
  report.result = tuner.Run();
  if (live) std::cerr << "\n";
  report.result.notes.insert(report.result.notes.begin(), notes.begin(), notes.end());
  report.reproduce = {fmt::format("moetune tune {} --ctx {} --workload {}{}{}{}", a.model, a.ctx,
                                  a.workload, a.proven_edge ? " --proven-edge" : "",
                                  a.vram.empty() ? "" : " --vram " + a.vram, te->reproduce)};
  const int rc = WriteTuneOutputs(report, {a.report, a.emit, a.json, a.output}, {a.model});
  if (journal && journal->unsaved() > 0) {
    // The result stands, but a rerun would measure these again: the exit
    // code says that not everything was saved.
    ReportError(
        Error(ErrorKind::kIo,
              fmt::format("{} of {} measurement(s) were not saved to the journal '{}' "
                          "({}); the result above is complete, but running the command "
                          "again measures those again",
                          journal->unsaved(), journal->results().size() - journal->resumed(),
                          journal->path(), journal->write_error()->message())));
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
  cmd->add_option("--vram", a->vram,
                  "Free GPU memory (default: the machine's; with --engine sim, the what-if GPU's)")
      ->check(ByteSize(1, int64_t{1} << 50));
  cmd->add_option("--reserve", a->reserve,
                  "GPU memory other programs hold or will hold (default 0, or the what-if "
                  "machine's)")
      ->check(ByteSize(0, int64_t{1} << 50));
  cmd->add_option("-t,--threads", a->threads, "Thread counts to try (default: from the topology)")
      ->check(IntList(1, 4096, 64));
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per measurement")
      ->check(CLI::Range(2, 50))
      ->capture_default_str();
  cmd->add_flag("--force", a->force, "Tune even when a critical check fails");
  cmd->add_flag("--proven-edge", a->proven_edge,
                "Take the edge when it was measured healthy at the target context instead of "
                "one layer more conservative (the output says what the step back costs)");
  AddSimBenchFlags(cmd, &a->sim, /*with_vram=*/false);
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
