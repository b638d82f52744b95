#pragma once
/// The exporters of `moetune models` (store/catalog.h): one per format.

#include <nlohmann/json.hpp>
#include <string>

#include "store/catalog.h"

namespace moetune {

/// The table of models (reference or path, architecture, MoE or dense, size,
/// quant, parts, readable), then each model's problem with its fix, then the
/// folders searched.
std::string FormatModelListing(const ModelListing& listing);

/// The JSON of `moetune models --json` (docs/cli.md, "## models").
nlohmann::json ModelListingToJson(const ModelListing& listing);

}  // namespace moetune
