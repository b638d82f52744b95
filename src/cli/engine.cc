// moetune engine: which llama.cpp moetune uses and what it can do.
#include <memory>

#include "cli/command.h"
#include "engine/engine_info.h"
#include "report/engine_report.h"

namespace moetune {
namespace {

struct EngineArgs {
  std::string llama_dir;
  bool json = false;
};

int Run(const EngineArgs& a) {
  DiscoveryOptions o;
  o.llama_dir = a.llama_dir;
  auto info = DiscoverEngine(o);
  if (!info.ok()) return ReportError(info.error());
  // Engine output need not be UTF-8 nor free of control bytes: JsonOutput
  // writes U+FFFD for invalid bytes, WriteOutput shows control bytes escaped.
  const std::string text = a.json ? JsonOutput(EngineInfoToJson(*info)) : FormatEngineInfo(*info);
  auto st = WriteOutput("-", text);
  return st.ok() ? kExitOk : ReportError(st.error());
}

}  // namespace

void RegisterEngineCommand(CLI::App& app, CommandRun* run) {
  auto args = std::make_shared<EngineArgs>();
  auto* cmd = app.add_subcommand(
      "engine", "Show the llama.cpp engine moetune uses: path, version, backends, devices");
  cmd->add_option(
      "--llama-dir", args->llama_dir,
      "Folder with llama.cpp's tools (else MOETUNE_LLAMA_DIR, the default engine, PATH)");
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  cmd->callback([args, run] { *run = [args] { return Run(*args); }; });
}

}  // namespace moetune
