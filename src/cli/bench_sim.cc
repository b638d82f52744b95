#include "cli/bench_sim.h"

#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "cli/command.h"
#include "cli/report_output.h"
#include "cli/validators.h"
#include "engine/sim_engine.h"
#include "report/bench_report.h"
#include "report/command_documents.h"
#include "report/uncertainty_report.h"
#include "tune/analysis.h"
#include "util/utf8.h"

namespace moetune {

void AddSimBenchFlags(CLI::App* cmd, SimBenchOptions* o, bool with_vram) {
  cmd->add_option("--engine", o->engine,
                  "llama (the real llama.cpp, default) or sim (the speed model on a what-if "
                  "machine; results are simulated)")
      ->check(CLI::IsMember({"llama", "sim"}));
  cmd->add_option("--seed", o->seed,
                  "Seed of the simulated engine's noise (same seed, same output)")
      ->check(SeedValue());
  AddMachineFlags(cmd, &o->machine, with_vram, /*with_profile=*/true);
}

Result<SimEngineOptions> ResolveSimEngine(const SimBenchOptions& o, ResolvedMachine* machine) {
  MOETUNE_ASSIGN_OR_RETURN(*machine, ResolveMachine(o.machine));
  for (const auto& n : machine->spec.notes) std::cerr << ForTerminal("moetune: note: " + n + "\n");
  SimEngineOptions so;
  so.machine = machine->spec;
  so.constants = machine->constants;
  so.uncertainty = machine->uncertainty;
  so.seed = o.seed;
  return so;
}

int RunSimBench(std::vector<RunConfig> configs, const SimBenchOptions& o, bool json,
                const std::string& output, bool default_threads, const std::string& report) {
  ResolvedMachine resolved;
  auto so = ResolveSimEngine(o, &resolved);
  if (!so.ok()) return ReportError(so.error());
  const ResolvedMachine* machine = &resolved;
  if (default_threads) {
    for (auto& c : configs) c.threads = std::max(1, machine->spec.cpu.p_cores);
  }
  SimEngine engine(*so);
  const auto t0 = std::chrono::steady_clock::now();
  BenchRun run = engine.Run(configs);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double simulated = 0;
  for (const auto& inv : run.invocations) simulated += inv.wall_seconds;
  std::string text;
  if (json) {
    nlohmann::json j = BenchRunToJson(run, engine.Info(), wall);
    j["simulated"] = true;
    j["simulated_seconds"] = simulated;
    j["machine"] = {{"label", machine->spec.label},
                    {"description", machine->spec.Describe()},
                    {"spill", SpillModeName(machine->spec.spill)},
                    {"calibrated", machine->uncertainty.calibrated},
                    {"seed", o.seed}};
    // Simulated speeds are predictions: they carry the constants' band.
    j["uncertainty"] = UncertaintyJson(machine->uncertainty);
    text = JsonOutput(j);
  } else {
    text = fmt::format(
        "SIMULATED by the speed model (not measured): {}\nseed {}, {} constants; the real engine "
        "would have taken about {:.0f} s\n{}\n\n",
        machine->spec.label, o.seed, CalibrationWord(machine->uncertainty), simulated,
        UncertaintyText(machine->uncertainty));
    text += FormatBenchMarkdown(run);
  }
  std::vector<std::string> inputs;
  if (!configs.empty()) inputs.push_back(configs.front().model);
  if (auto st = WriteOutput(output, text, inputs); !st.ok()) return ReportError(st.error());
  if (!report.empty()) {
    const Analysis analysis = Analyze(run.results, AnalysisOptions{});
    auto st = WriteReportFile(
        report, BenchDocument(run, analysis, engine.Info(), wall, OwnCommandLine()), inputs);
    if (!st.ok()) return ReportError(st.error());
  }
  if (run.FailureCount() > 0) {
    std::cerr << fmt::format(
        "moetune: {} of {} simulated configuration(s) failed (see the table)\n", run.FailureCount(),
        run.results.size());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace moetune
