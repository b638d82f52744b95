#include "util/json_parse.h"

#include <fmt/format.h>

namespace moetune {
namespace {

// Checks depth and value count without building anything. Strings are skipped
// (with their escapes) so that brackets inside them do not count.
Status ScanJson(std::string_view text, std::string_view what, const JsonLimits& limits) {
  int depth = 0;
  std::size_t values = 0;
  bool in_string = false;
  bool in_scalar = false;  // inside a number or literal (true, false, null)
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    const bool scalar_char = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' ||
                             c == '+' || c == '.' || (c >= 'A' && c <= 'Z');
    if (scalar_char) {
      if (!in_scalar) ++values;
      in_scalar = true;
    } else {
      in_scalar = false;
    }
    if (c == '"') {
      in_string = true;
      ++values;  // keys count too: they cost as much as values
    } else if (c == '{' || c == '[') {
      ++values;
      if (++depth > limits.max_depth) {
        return Error(ErrorKind::kFormat,
                     fmt::format("{}: JSON nested deeper than {} levels (at byte {}); no file "
                                 "moetune reads nests like that: check that it is the right file",
                                 what, limits.max_depth, i));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
    if (values > limits.max_values) {
      return Error(ErrorKind::kFormat,
                   fmt::format("{}: more than {} JSON values (at byte {}); no file moetune reads "
                               "holds that many: check that it is the right file",
                               what, limits.max_values, i));
    }
  }
  return OkStatus();
}

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text, std::string_view what,
                                 const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}: {} bytes of JSON, more than the {} MiB moetune reads", what,
                             text.size(), limits.max_bytes >> 20));
  }
  MOETUNE_TRY(ScanJson(text, what, limits));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // The parser's own message says where; without exceptions it is not
    // available, so a second parse with exceptions fetches it (rare: errors only).
    std::string detail = "not valid JSON";
    try {
      [[maybe_unused]] const nlohmann::json again = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
      detail = fmt::format("not valid JSON (at byte {})", e.byte);
    } catch (const std::exception&) {
    }
    return Error(ErrorKind::kFormat, fmt::format("{}: {}", what, detail));
  }
  return j;
}

nlohmann::json ParseJsonOrDiscarded(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes || !ScanJson(text, "", limits).ok())
    return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

}  // namespace moetune
