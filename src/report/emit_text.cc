#include "report/emit_text.h"

#include <fmt/format.h>

#include <filesystem>

#include "util/utf8.h"

namespace moetune {
namespace {

// Shown as \uXXXX in YAML values: the bidirectional controls (they make text
// read in another order than it is), the BOM and the noncharacters U+FFFE and
// U+FFFF (not printable to YAML readers).
bool YamlHidden(uint32_t cp) {
  return cp == 0x200E || cp == 0x200F || cp == 0x061C || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

// YAML 1.2 (section 5.7) escapes for C0, DEL and C1.
std::string YamlControl(uint32_t cp) {
  switch (cp) {
    case 0x00:
      return "\\0";
    case 0x07:
      return "\\a";
    case 0x08:
      return "\\b";
    case 0x09:
      return "\\t";
    case 0x0A:
      return "\\n";
    case 0x0B:
      return "\\v";
    case 0x0C:
      return "\\f";
    case 0x0D:
      return "\\r";
    case 0x1B:
      return "\\e";
    case 0x85:
      return "\\N";
    default:
      return fmt::format("\\x{:02x}", cp);
  }
}

bool Control(uint32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

}  // namespace

bool IsLineBreak(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x85 || cp == 0x2028 ||
         cp == 0x2029;
}

std::vector<std::string> CommentTexts(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  auto add = [&out](std::string_view piece) {
    std::string safe = ForTerminalField(piece);
    for (const auto& [raw, shown] :
         {std::pair<std::string_view, std::string_view>{"\xEF\xBF\xBE", "\\ufffe"},
          {"\xEF\xBF\xBF", "\\uffff"}}) {
      for (size_t at = safe.find(raw); at != std::string::npos; at = safe.find(raw, at)) {
        safe.replace(at, raw.size(), shown);
      }
    }
    out.push_back(std::move(safe));
  };
  for (const std::string& line : lines) {
    std::string_view rest = line;
    size_t start = 0;
    for (size_t i = 0; i < rest.size();) {
      uint32_t cp = 0;
      const size_t n = DecodeUtf8(rest.substr(i), &cp);
      if (n != 0 && IsLineBreak(cp)) {
        add(rest.substr(start, i - start));
        // \r\n is one break.
        i += (cp == '\r' && i + 1 < rest.size() && rest[i + 1] == '\n') ? 2 : n;
        start = i;
        continue;
      }
      i += n == 0 ? 1 : n;
    }
    add(rest.substr(start));
  }
  return out;
}

std::string CommentBlock(const std::vector<std::string>& lines, std::string_view mark) {
  std::string out;
  for (const auto& text : CommentTexts(lines)) out += fmt::format("{} {}\n", mark, text);
  return out;
}

Error CannotCarry(std::string_view flag, std::string_view value, std::string_view problem,
                  std::string_view format, std::string_view instead) {
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("{} value '{}' {}, which {} cannot carry; rename the file or use "
                           "--emit {}",
                           flag, ForTerminalField(value), problem, format, instead));
}

Result<std::string> YamlQuoted(std::string_view value) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(value.substr(i), &cp);
    if (n == 0) return Error(ErrorKind::kInvalidArgument, "is not UTF-8");
    if (cp == '"' || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (Control(cp)) {
      out += YamlControl(cp);
    } else if (cp == 0x2028 || cp == 0x2029) {
      out += cp == 0x2028 ? "\\L" : "\\P";
    } else if (YamlHidden(cp)) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out.append(value.substr(i, n));
    }
    i += n;
  }
  return out + "\"";
}

std::string PowerShellQuoted(std::string_view value) {
  std::string out = "'";
  for (size_t i = 0; i < value.size();) {
    uint32_t cp = 0;
    size_t n = DecodeUtf8(value.substr(i), &cp);
    if (n == 0) n = 1;  // a byte that is not UTF-8 is written as it is
    const std::string_view ch = value.substr(i, n);
    out.append(ch);
    // ' and the typographic single quotes U+2018..U+201B all end a
    // single-quoted string in PowerShell; doubled, each stands for itself.
    if (cp == '\'' || (n == 3 && cp >= 0x2018 && cp <= 0x201B)) out.append(ch);
    i += n;
  }
  return out + "'";
}

Result<std::string> BatchText(std::string_view value) {
  std::string out;
  for (char c : value) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"') return Error(ErrorKind::kInvalidArgument, "holds a double quote");
    if (b < 0x20) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("holds the control character \\x{:02x}", b));
    }
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

Result<std::string> BatchWord(std::string_view value) {
  MOETUNE_ASSIGN_OR_RETURN(std::string text, BatchText(value));
  const bool plain =
      !value.empty() && value.find_first_not_of(
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                            "-_./:\\+") == std::string_view::npos;
  if (plain) return text;
  // The C runtime reads 2n backslashes before a quote as n backslashes.
  size_t trailing = 0;
  while (trailing < text.size() && text[text.size() - 1 - trailing] == '\\') ++trailing;
  return "\"" + text + std::string(trailing, '\\') + "\"";
}

std::string EntryName(std::string_view preferred, std::string_view model_path) {
  std::string name(preferred);
  if (name.empty()) {
    name = std::filesystem::path(std::string(model_path)).filename().string();
    if (name.size() > 5 && name.substr(name.size() - 5) == ".gguf") name.resize(name.size() - 5);
  }
  if (name.empty()) name = "moetune";
  std::string out;
  for (size_t i = 0; i < name.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(std::string_view(name).substr(i), &cp);
    // One plain token: section and key syntax, comments, macros, controls,
    // line breaks and bytes that are not UTF-8 become '-'.
    if (n == 0 || Control(cp) || IsLineBreak(cp) || YamlHidden(cp) ||
        (cp < 0x80 &&
         std::string_view("[]#;$\"").find(static_cast<char>(cp)) != std::string_view::npos)) {
      out += '-';
    } else {
      out.append(name, i, n);
    }
    i += n == 0 ? 1 : n;
  }
  return out;
}

}  // namespace moetune
