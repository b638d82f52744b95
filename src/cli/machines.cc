// `moetune machines`: the named presets for what-if machines (--machine), with
// their figures and where each comes from.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "perf/presets.h"
#include "util/table.h"

namespace moetune {

void RegisterMachinesCommand(CLI::App& app, CommandRun* run) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "machines", "List the GPU, memory and CPU presets for what-if machines (--machine)");
  cmd->add_flag("--json", *json, "JSON output");
  cmd->callback([json, run] {
    *run = [json]() -> int {
      const auto presets = MachinePresets();
      if (*json) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& p : presets) {
          j.push_back({{"name", p.name},
                       {"kind", PresetKindName(p.kind)},
                       {"title", p.title},
                       {"figures", p.figures},
                       {"source", p.source}});
        }
        std::cout << j.dump(2) << "\n";
        return kExitOk;
      }
      using A = MarkdownTable::Align;
      MarkdownTable t({{"preset", A::kLeft},
                       {"kind", A::kLeft},
                       {"what", A::kLeft},
                       {"figures", A::kLeft},
                       {"source", A::kLeft}});
      for (const auto& p : presets)
        t.AddRow({p.name, PresetKindName(p.kind), p.title, p.figures, p.source});
      std::cout << t.Render()
                << "\nCombine them: --machine rtx4070-12g,ddr4-3200-2ch,6p8e (N identical GPUs: "
                   "2xrtx5090-32g); override one figure with --vram, --reserve, --gpu-bw, "
                   "--pcie-bw, --ram-bw, --cpu, --spill.\n";
      return kExitOk;
    };
  });
}

}  // namespace moetune
