// `moetune models [FOLDER...] [--json]`: the GGUF models on this machine where
// people keep them (Ollama, the Hugging Face cache, llama.cpp's download cache,
// LM Studio) and in the folders named, each with the reference that names it.
#include "cli/command.h"
#include "report/models_report.h"
#include "store/catalog.h"

namespace moetune {

void RegisterModelsCommand(CLI::App& app, CommandRun* run) {
  struct Opts {
    std::vector<std::string> folders;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "models",
      "List the GGUF models on this machine (Ollama, Hugging Face cache, llama.cpp cache, "
      "LM Studio, and FOLDERs) with the reference that names each");
  cmd->add_option("folder", o->folders, "Folders (or files) to search as well");
  cmd->add_flag("--json", o->json, "Print JSON (fields in docs/cli.md)");
  cmd->callback([o, run] {
    *run = [o]() -> int {
      ListOptions opts;
      opts.folders = o->folders;
      const ModelListing listing = ListModels(StoreEnvironment::Current(), opts);
      const std::string text =
          o->json ? JsonOutput(ModelListingToJson(listing)) : FormatModelListing(listing);
      auto st = WriteOutput("-", text);
      return st.ok() ? kExitOk : ReportError(st.error());
    };
  });
}

}  // namespace moetune
