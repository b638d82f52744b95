#include "report/machines_report.h"

#include "util/table.h"

namespace moetune {

nlohmann::json MachinePresetsToJson(const std::vector<MachinePreset>& presets) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : presets) {
    j.push_back({{"name", p.name},
                 {"kind", PresetKindName(p.kind)},
                 {"title", p.title},
                 {"figures", p.figures},
                 {"source", p.source}});
  }
  return j;
}

std::string FormatMachinePresets(const std::vector<MachinePreset>& presets) {
  using A = MarkdownTable::Align;
  MarkdownTable t({{"preset", A::kLeft},
                   {"kind", A::kLeft},
                   {"what", A::kLeft},
                   {"figures", A::kLeft},
                   {"source", A::kLeft}});
  for (const auto& p : presets)
    t.AddRow({p.name, PresetKindName(p.kind), p.title, p.figures, p.source});
  return t.Render() +
         "\nCombine them: --machine rtx4070-12g,ddr4-3200-2ch,6p8e (N identical GPUs: "
         "2xrtx5090-32g); override one figure with --vram, --reserve, --gpu-bw, --pcie-bw, "
         "--ram-bw, --cpu, --spill.\n";
}

}  // namespace moetune
