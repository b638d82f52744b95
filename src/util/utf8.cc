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

std::string ForTerminal(std::string_view text) {
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
    if (n == 1 && ((b0 < 0x20 && b0 != '\n' && b0 != '\t') || b0 == 0x7F)) {
      out += fmt::format("\\x{:02x}", b0);
    } else if (n == 2 && b0 == 0xC2 && static_cast<uint8_t>(text[i + 1]) < 0xA0) {
      // C1 controls U+0080..U+009F (0x9B is a one-byte CSI on some terminals).
      out += fmt::format("\\u{:04x}", static_cast<uint8_t>(text[i + 1]));
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

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
