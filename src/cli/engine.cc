// moetune engine: which llama.cpp moetune uses and what it can do.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "engine/engine_info.h"
#include "util/subprocess.h"

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
  if (!a.json) {
    std::cout << FormatEngineInfo(*info);
    return kExitOk;
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : info->devices) {
    devices.push_back(
        {{"name", d.name},
         {"description", d.description},
         {"total_bytes", d.total ? nlohmann::json(d.total->count()) : nlohmann::json(nullptr)},
         {"free_bytes", d.free ? nlohmann::json(d.free->count()) : nlohmann::json(nullptr)}});
  }
  nlohmann::json tools = nlohmann::json::object();
  for (const char* t : {"llama-bench", "llama-server", "llama-fit-params", "llama-cli"}) {
    tools[t] = info->HasTool(t) ? nlohmann::json(info->ToolPath(t)) : nlohmann::json(nullptr);
  }
  const nlohmann::json j = {{"dir", info->dir},
                            {"origin", info->origin},
                            {"version_line", info->version_line},
                            {"version", info->version},
                            {"build_number", info->build_number},
                            {"commit", info->commit},
                            {"built_with", info->built_with},
                            {"backends", info->backends},
                            {"devices", devices},
                            {"tools", tools},
                            {"bench_flags", info->bench_flags},
                            {"warnings", info->warnings}};
  // Engine output need not be UTF-8: invalid bytes become U+FFFD, never an abort.
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return kExitOk;
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
