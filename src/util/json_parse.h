#pragma once
/// The one parse of JSON that comes from outside moetune (files a person or
/// another program wrote, engine output, a server's answers): bounded in size,
/// nesting depth and number of values before nlohmann builds anything.
///
/// Why: nlohmann's parser itself is iterative, but copying, dumping and
/// comparing a value recurse once per level, so 100,000 nested '[' crash the
/// process (stack overflow) long after the parse succeeded; and a few MiB of
/// "[0,0,0,...]" become hundreds of MiB of nodes. A linear scan of the text
/// checks the bounds first; only then is the text parsed. Nothing throws.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "util/result.h"

namespace moetune {

struct JsonLimits {
  /// Bytes of text. Readers that bound their file (or line) size more tightly
  /// keep their own bound; this one is the backstop.
  std::size_t max_bytes = std::size_t{64} << 20;
  /// Levels of objects and arrays. moetune's own files nest fewer than 10.
  int max_depth = 128;
  /// Values (every number, string, literal, object and array counts one).
  std::size_t max_values = std::size_t{1} << 21;
};

inline constexpr JsonLimits kDefaultJsonLimits{};

/// Parses `text`; `what` names it in errors ("tune file 'x.json'", "line 4").
/// Errors (kFormat) say which bound was passed, or where the JSON is invalid.
Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what,
                                 const JsonLimits& limits = kDefaultJsonLimits);

/// ParseJson for readers that only need to know whether a value is usable (a
/// line of JSONL skipped when bad): a discarded value (`is_discarded()`) when
/// `text` is out of bounds or not JSON.
nlohmann::json ParseJsonOrDiscarded(std::string_view text,
                                    const JsonLimits& limits = kDefaultJsonLimits);

}  // namespace moetune
