// moetune: tunes llama.cpp for Mixture-of-Experts models that do not fit in VRAM.
// Thin main: parse, run one command, map errors to exit codes. All logic is in moetune_core.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "cli/command.h"
#include "util/command_files.h"
#include "util/subprocess.h"
#include "util/utf8.h"

int main(int argc, char** argv) {
  try {
    // Every command may start engine processes: kill their process groups on
    // terminating signals so that no llama.cpp process outlives moetune.
    moetune::InstallChildCleanupOnSignals();
    CLI::App app{"moetune: fastest safe llama.cpp settings for MoE models larger than VRAM"};
    app.set_version_flag("--version", std::string("moetune ") + MOETUNE_VERSION);
    app.require_subcommand(1);
    // The files the command reads and writes: no output lands on an input or
    // on another output (util/command_files.h).
    moetune::CommandFilesScope files;
    moetune::CommandRun run;
    // One line per command (src/cli/<command>.cc).
    moetune::RegisterInspectCommand(app, &run);
    moetune::RegisterPlanCommand(app, &run);
    moetune::RegisterSynthCommand(app, &run);
    moetune::RegisterBenchCommand(app, &run);
    moetune::RegisterEngineCommand(app, &run);
    moetune::RegisterDemoCommand(app, &run);
    moetune::RegisterDoctorCommand(app, &run);
    moetune::RegisterAnalyzeCommand(app, &run);
    moetune::RegisterTuneCommand(app, &run);
    moetune::RegisterCalibrateCommand(app, &run);
    moetune::RegisterMachinesCommand(app, &run);
    moetune::RegisterWatchCommand(app, &run);
    moetune::RegisterServeCommand(app, &run);
    moetune::RegisterReportCommand(app, &run);
    moetune::RegisterModelsCommand(app, &run);
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int rc = app.exit(e);
      return rc == 0 ? moetune::kExitOk : moetune::kExitUsage;
    }
    if (auto claimed = moetune::ClaimOutputFlags(app); !claimed.ok()) {
      moetune::ReportError(claimed.error());
      return moetune::kExitUsage;
    }
    return run ? run() : moetune::kExitUsage;
  } catch (const std::bad_alloc&) {
    // Last resort: expected failures are values; these are not expected.
    std::fputs("moetune: error: out of memory\n", stderr);
  } catch (const std::exception& e) {
    const std::string what = moetune::ForTerminal(e.what());
    std::fprintf(stderr, "moetune: internal error: %s (please report this with the command line)\n",
                 what.c_str());
  } catch (...) {
    std::fputs("moetune: internal error: unknown exception (please report this)\n", stderr);
  }
  return moetune::kExitError;
}
