// moetune: tunes llama.cpp for Mixture-of-Experts models that do not fit in VRAM.
// Thin main: parse, run one command, map errors to exit codes. All logic is in moetune_core.
#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "util/subprocess.h"

int main(int argc, char** argv) {
  // Every command may start engine processes: kill their process groups on
  // SIGINT/SIGTERM/SIGHUP so that no llama.cpp process outlives moetune.
  moetune::InstallChildCleanupOnSignals();
  CLI::App app{"moetune: fastest safe llama.cpp settings for MoE models larger than VRAM"};
  app.set_version_flag("--version", std::string("moetune ") + MOETUNE_VERSION);
  app.require_subcommand(1);
  moetune::CommandRun run;
  // One line per command (src/cli/<command>.cc).
  moetune::RegisterInspectCommand(app, &run);
  moetune::RegisterPlanCommand(app, &run);
  moetune::RegisterSynthCommand(app, &run);
  moetune::RegisterBenchCommand(app, &run);
  moetune::RegisterEngineCommand(app, &run);
  moetune::RegisterDemoCommand(app, &run);
  moetune::RegisterDoctorCommand(app, &run);
  moetune::RegisterCalibrateCommand(app, &run);
  moetune::RegisterMachinesCommand(app, &run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? moetune::kExitOk : moetune::kExitUsage;
  }
  return run ? run() : moetune::kExitUsage;
}
