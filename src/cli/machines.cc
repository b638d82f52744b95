// `moetune machines`: the named presets for what-if machines (--machine), with
// their figures and where each comes from.
#include <memory>

#include "cli/command.h"
#include "report/machines_report.h"
#include "speed/presets.h"

namespace moetune {

void RegisterMachinesCommand(CLI::App& app, CommandRun* run) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "machines", "List the GPU, memory and CPU presets for what-if machines (--machine)");
  cmd->add_flag("--json", *json, "JSON output");
  cmd->callback([json, run] {
    *run = [json]() -> int {
      const auto presets = MachinePresets();
      const std::string text =
          *json ? JsonOutput(MachinePresetsToJson(presets)) : FormatMachinePresets(presets);
      auto st = WriteOutput("-", text);
      return st.ok() ? kExitOk : ReportError(st.error());
    };
  });
}

}  // namespace moetune
