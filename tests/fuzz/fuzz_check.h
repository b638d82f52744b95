#pragma once
/// Shared by the fuzz targets: the property check (a violated property aborts,
/// which libFuzzer reports as a finding with the input that caused it) and the
/// input read as JSON.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "util/json_parse.h"

namespace moetune::fuzz {

inline void Check(bool ok, const char* target, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s invariant violated: %s\n", target, what);
    std::abort();
  }
}

/// The input as JSON, or nullopt when it is not JSON (those inputs test only
/// the parser, not moetune's readers). Parsed the way every reader of outside
/// JSON parses (util/json_parse.h: bounded depth and size), so that the
/// targets see what production sees.
inline std::optional<nlohmann::json> JsonInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = ParseJsonOrDiscarded(text);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace moetune::fuzz
