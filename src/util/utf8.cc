#include "util/utf8.h"

#include <fmt/format.h>

#include <cstdint>

namespace moetune {
namespace {

// Length of the well-formed UTF-8 sequence at the start of `s`, or 0 when it is
// ill-formed (Unicode 15, table 3-7).
size_t SequenceLength(std::string_view s) {
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  const auto b1 = static_cast<uint8_t>(s[1]);
  if (b1 < lo || b1 > hi) return 0;
  for (size_t i = 2; i < n; ++i) {
    const auto b = static_cast<uint8_t>(s[i]);
    if (b < 0x80 || b > 0xBF) return 0;
  }
  return n;
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text.substr(i));
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string ToValidUtf8(std::string_view text, bool* replaced) {
  std::string out;
  out.reserve(text.size());
  bool any = false;
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text.substr(i));
    if (n == 0) {
      out += kReplacement;
      any = true;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  if (replaced != nullptr) *replaced = any;
  return out;
}

namespace {

// The code point of a well-formed sequence of 2 to 4 bytes.
uint32_t CodePoint(std::string_view s, size_t n) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[i])); };
  if (n == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  if (n == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

// Code points that are never shown raw: C1 controls (0x9B is a one-byte CSI
// on some terminals), the Unicode line and paragraph separators (line breaks
// to editors, YAML and JavaScript), and the bidirectional controls that make
// a terminal show text in another order than it is (U+202E turns
// "txt.exe" around): LRM, RLM, ALM, LRE..RLO, LRI..PDI.
bool Hidden(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x200E ||
         cp == 0x200F || cp == 0x061C || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

std::string Escaped(std::string_view text, bool one_line) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = SequenceLength(text.substr(i));
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    const auto b0 = static_cast<uint8_t>(text[i]);
    if (n == 1) {
      const bool layout = b0 == '\n' || b0 == '\t';
      if ((b0 < 0x20 && (one_line || !layout)) || b0 == 0x7F) {
        out += b0 == '\n' ? std::string("\\n") : fmt::format("\\x{:02x}", b0);
      } else {
        out += static_cast<char>(b0);
      }
    } else if (const uint32_t cp = CodePoint(text.substr(i), n); Hidden(cp)) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

size_t DecodeUtf8(std::string_view text, uint32_t* code_point) {
  if (text.empty()) return 0;
  const size_t n = SequenceLength(text);
  if (n == 0) return 0;
  *code_point = n == 1 ? static_cast<uint8_t>(text[0]) : CodePoint(text, n);
  return n;
}

std::string ForTerminal(std::string_view text) { return Escaped(text, /*one_line=*/false); }

std::string ForTerminalField(std::string_view text) { return Escaped(text, /*one_line=*/true); }

std::string DumpJson(const nlohmann::json& j, int indent, bool* replaced) {
  if (replaced != nullptr) *replaced = false;
  try {
    return j.dump(indent);
  } catch (const nlohmann::json::type_error&) {
    // Ill-formed UTF-8 in some string (error 316): write it with U+FFFD.
    if (replaced != nullptr) *replaced = true;
    return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace moetune
