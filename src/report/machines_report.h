#pragma once
/// The exporters of `moetune machines` (speed/presets.h): one per format.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "speed/presets.h"

namespace moetune {

/// The presets as a JSON array of {name, kind, title, figures, source}.
nlohmann::json MachinePresetsToJson(const std::vector<MachinePreset>& presets);

/// The presets as a table, with how to combine them.
std::string FormatMachinePresets(const std::vector<MachinePreset>& presets);

}  // namespace moetune
