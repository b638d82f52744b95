#pragma once
/// Text from outside moetune (model metadata, file names, engine output) may be
/// any bytes. Two rules keep it harmless: JSON output is always valid UTF-8
/// (invalid bytes become U+FFFD, and the caller is told so it can say so), and
/// a terminal never receives a raw control byte from such text (an ESC in a
/// model name would otherwise clear the screen or worse).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace moetune {

/// True when `text` is well-formed UTF-8 (no overlongs, surrogates or values
/// above U+10FFFF).
bool IsValidUtf8(std::string_view text);

/// `text` with every ill-formed sequence replaced by U+FFFD; `*replaced` (when
/// given) is set to whether anything was replaced.
std::string ToValidUtf8(std::string_view text, bool* replaced = nullptr);

/// Valid UTF-8 that is safe to print: control characters other than newline and
/// tab (C0, DEL, C1) are shown as visible escapes (`\x1b`), ill-formed UTF-8 as U+FFFD.
std::string ForTerminal(std::string_view text);

/// Serializes `j` (indent < 0: compact). Strings that are not valid UTF-8 are
/// written with U+FFFD instead of throwing; `*replaced` says whether that happened.
std::string DumpJson(const nlohmann::json& j, int indent = 2, bool* replaced = nullptr);

}  // namespace moetune
