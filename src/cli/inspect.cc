// `moetune inspect MODEL`: architecture, shapes, per-layer memory map by role,
// KV per token and at common contexts.
#include <fmt/format.h>

#include "cli/command.h"
#include "cli/model_argument.h"
#include "cli/validators.h"
#include "model/model_info.h"
#include "report/model_report.h"
#include "util/units.h"

namespace moetune {

void RegisterInspectCommand(CLI::App& app, CommandRun* run) {
  struct Opts {
    std::string model;
    bool json = false;
    std::vector<std::string> contexts;
    std::string output;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a model's architecture and exact memory map");
  cmd->add_option("model", opts->model, "GGUF model file (any part of a split model)")->required();
  cmd->add_flag("--json", opts->json, "Print JSON (fields in docs/cli.md)");
  cmd->add_option("--ctx", opts->contexts,
                  "Contexts to size (e.g. 4K 32768); default 4K 8K 32K 128K")
      ->delimiter(',')
      ->check(TokenCount(1, kMaxContext));
  cmd->add_option("-o,--output", opts->output, "Write to this file (atomically) instead of stdout");
  cmd->callback([opts, run] {
    *run = WithModel(&opts->model, [opts]() -> int {
      std::vector<int64_t> ctx;
      for (const auto& s : opts->contexts) ctx.push_back(*ParseTokenCount(s));  // validated
      if (ctx.empty()) ctx = DefaultInspectContexts();
      auto m = LoadModelInfo(opts->model);
      if (!m.ok()) return ReportError(m.error());
      const std::string text = opts->json ? JsonOutput(InspectJson(*m, ctx)) : InspectText(*m, ctx);
      auto st = WriteOutput(opts->output, text, ModelFiles(*m));
      return st.ok() ? kExitOk : ReportError(st.error());
    });
  });
}

}  // namespace moetune
