#pragma once
/// The exporters of `moetune engine` (engine/engine_info.h): one per format.

#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine_info.h"

namespace moetune {

/// Human-readable report of `info`: folder, version, backends, devices, tools,
/// llama-bench flags, warnings.
std::string FormatEngineInfo(const EngineInfo& info);

/// The JSON of `moetune engine --json` (docs/cli.md, "## engine").
nlohmann::json EngineInfoToJson(const EngineInfo& info);

}  // namespace moetune
