#pragma once
/// Text from outside moetune (model metadata, file names, engine output) may be
/// any bytes. Two rules keep it harmless: JSON output is always valid UTF-8
/// (invalid bytes become U+FFFD, and the caller is told so it can say so), and
/// a terminal never receives a raw control byte from such text (an ESC in a
/// model name would otherwise clear the screen or worse).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace moetune {

/// True when `text` is well-formed UTF-8 (no overlongs, surrogates or values
/// above U+10FFFF).
bool IsValidUtf8(std::string_view text);

/// The code point of the UTF-8 sequence at the start of `text` in `*code_point`
/// and its length in bytes; 0 when the sequence is ill-formed or `text` is
/// empty (for writers that escape per character).
size_t DecodeUtf8(std::string_view text, uint32_t* code_point);

/// `text` with every ill-formed sequence replaced by U+FFFD; `*replaced` (when
/// given) is set to whether anything was replaced.
std::string ToValidUtf8(std::string_view text, bool* replaced = nullptr);

/// Valid UTF-8 that is safe to print: control characters other than newline and
/// tab (C0, DEL, C1), the line separators U+2028/U+2029 and the bidirectional
/// controls (U+202A..U+202E, U+2066..U+2069, LRM, RLM, ALM) are shown as
/// visible escapes (`\x1b`, `\u202e`), ill-formed UTF-8 as U+FFFD. For whole
/// texts whose own lines are moetune's layout.
std::string ForTerminal(std::string_view text);

/// ForTerminal for one value from outside (a model name from GGUF metadata, a
/// path from a server's /props, a process name) shown inside a line of
/// moetune's text: newlines and tabs are escaped too (`\n`, `\x09`), so that
/// such a value can never start a line of its own (a forged command line).
std::string ForTerminalField(std::string_view text);

/// Serializes `j` (indent < 0: compact). Strings that are not valid UTF-8 are
/// written with U+FFFD instead of throwing; `*replaced` says whether that happened.
std::string DumpJson(const nlohmann::json& j, int indent = 2, bool* replaced = nullptr);

}  // namespace moetune
