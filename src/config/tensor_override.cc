#include "config/tensor_override.h"

#include <fmt/format.h>

#include <cstddef>
#include <optional>

#include "util/text.h"

namespace moetune {
namespace {

bool IsSpecial(char c) { return c == ',' || c == ';' || c == '='; }

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// End (one past) of the escape sequence that starts at `i` (pattern[i] == '\\'):
// \xhh, \uhhhh and \cX when well formed, else the backslash and one character.
std::size_t EscapeEnd(std::string_view p, std::size_t i) {
  if (i + 1 >= p.size()) return p.size();
  auto hex_run = [&](std::size_t from, std::size_t n) {
    if (from + n > p.size()) return false;
    for (std::size_t k = 0; k < n; ++k) {
      if (!IsHex(p[from + k])) return false;
    }
    return true;
  };
  const char c = p[i + 1];
  if (c == 'x' && hex_run(i + 2, 2)) return i + 4;
  if (c == 'u' && hex_run(i + 2, 4)) return i + 6;
  if (c == 'c' && i + 2 < p.size() &&
      ((p[i + 2] >= 'a' && p[i + 2] <= 'z') || (p[i + 2] >= 'A' && p[i + 2] <= 'Z'))) {
    return i + 3;
  }
  return i + 2;
}

// End of the character class that starts at `i` (pattern[i] == '['): a ']'
// right after '[' or "[^" is a literal.
std::size_t ClassEnd(std::string_view p, std::size_t i) {
  std::size_t j = i + 1;
  if (j < p.size() && p[j] == '^') ++j;
  if (j < p.size() && p[j] == ']') ++j;
  while (j < p.size() && p[j] != ']') j = p[j] == '\\' ? EscapeEnd(p, j) : j + 1;
  return std::min(p.size(), j + 1);
}

// End of the group that starts at `i` (pattern[i] == '('), nested groups,
// classes and escapes included.
std::size_t GroupEnd(std::string_view p, std::size_t i) {
  int depth = 0;
  std::size_t j = i;
  while (j < p.size()) {
    const char c = p[j];
    if (c == '\\') {
      j = EscapeEnd(p, j);
    } else if (c == '[') {
      j = ClassEnd(p, j);
    } else {
      if (c == '(') ++depth;
      if (c == ')' && --depth == 0) return j + 1;
      ++j;
    }
  }
  return p.size();
}

// "{m,n}" / "{m,}" / "{m}" at `i`: the bounds and the end; nullopt when the
// brace is not a quantifier (then ECMAScript would reject the pattern, and it
// is passed on for the engine to report).
struct Counted {
  std::string_view min;
  std::string_view max;  // empty with has_comma: unbounded
  bool has_comma = false;
  std::size_t end = 0;
};
std::optional<Counted> ParseCounted(std::string_view p, std::size_t i) {
  Counted q;
  std::size_t j = i + 1;
  q.min = LeadingDigits(p.substr(j));
  j += q.min.size();
  if (q.min.empty()) return std::nullopt;
  if (j < p.size() && p[j] == ',') {
    q.has_comma = true;
    ++j;
    q.max = LeadingDigits(p.substr(j));
    j += q.max.size();
  }
  if (j >= p.size() || p[j] != '}') return std::nullopt;
  q.end = j + 1;
  return q;
}

std::string EscapeLiteral(char c) { return fmt::format("\\x{:02x}", static_cast<unsigned>(c)); }

// Literal ',', ';', '=' inside an escape-free span become \xhh.
std::string EscapeSpecials(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\') {
      const std::size_t e = EscapeEnd(s, i);
      const std::string_view esc = s.substr(i, e - i);
      // "\," is a literal comma in ECMAScript: still a comma on the command line.
      out += esc.size() == 2 && IsSpecial(esc[1]) ? EscapeLiteral(esc[1]) : std::string(esc);
      i = e - 1;
    } else if (IsSpecial(s[i])) {
      out += EscapeLiteral(s[i]);
    } else {
      out += s[i];
    }
  }
  return out;
}

Result<std::string> Join(const std::vector<OverrideRule>& rules, char separator) {
  std::string out;
  for (const auto& r : rules) {
    MOETUNE_ASSIGN_OR_RETURN(const std::string p, CommaFreePattern(r.pattern));
    if (!out.empty()) out += separator;
    out += p + "=" + r.buft;
  }
  return out;
}

}  // namespace

Result<std::vector<OverrideRule>> ParseTensorOverrides(std::string_view text) {
  std::vector<OverrideRule> rules;
  std::size_t start = 0;
  int depth = 0;  // inside (...) or {...}
  auto finish = [&](std::size_t end) -> Status {
    const std::string_view item = Trim(text.substr(start, end - start));
    start = end + 1;
    if (item.empty()) return OkStatus();
    const std::size_t eq = item.rfind('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("tensor override '{}' in '{}' is not pattern=BUFFER_TYPE (e.g. "
                               "blk\\.[0-9]+\\.ffn_.*_exps=CPU)",
                               item, text));
    }
    const std::string_view buft = Trim(item.substr(eq + 1));
    // Buffer type names: "CPU", "CUDA0", "CUDA_Host", "Vulkan0", "RPC[host:port]".
    for (char c : buft) {
      const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.' || c == ':' || c == '[' || c == ']';
      if (!ok) {
        return Error(ErrorKind::kInvalidArgument,
                     fmt::format("tensor override '{}' in '{}': '{}' is not a buffer type name "
                                 "(CPU, CUDA0, CUDA_Host, Vulkan0, ...)",
                                 item, text, buft));
      }
    }
    rules.push_back({std::string(Trim(item.substr(0, eq))), std::string(buft)});
    return OkStatus();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\') {
      i = EscapeEnd(text, i) - 1;
    } else if (c == '[') {
      i = ClassEnd(text, i) - 1;
    } else if (c == '(' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == '}') && depth > 0) {
      --depth;
    } else if ((c == ',' || c == ';') && depth == 0) {
      if (auto st = finish(i); !st.ok()) return st.error();
    }
  }
  if (auto st = finish(text.size()); !st.ok()) return st.error();
  return rules;
}

namespace {

// The group starting at p[i] with its inside rewritten on its own ("(?:",
// "(?!" kept as they are); `*end` is where the group ends.
Result<std::string> CommaFreeGroup(std::string_view p, std::size_t i, std::size_t* end) {
  *end = GroupEnd(p, i);
  // The group's inside is rewritten on its own ("(?:", "(?=" kept as is).
  std::size_t inner = i + 1;
  if (inner + 1 < p.size() && p[inner] == '?') {
    if (p[inner + 1] == '=') {
      // "(?=" is syntax, and every llama.cpp tool cuts the pattern there.
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("tensor pattern '{}': llama.cpp takes a pattern up to its first "
                               "'=', so a lookahead (?=...) cannot reach it; match the name "
                               "itself instead",
                               p));
    }
    // Only "(?:" and "(?!" are ECMAScript group prefixes; anything else
    // after "(?" is rewritten like any other text.
    if (p[inner + 1] == ':' || p[inner + 1] == '!') inner += 2;
  }
  const std::size_t close = *end > inner && p[*end - 1] == ')' ? *end - 1 : *end;
  MOETUNE_ASSIGN_OR_RETURN(const std::string body,
                           CommaFreePattern(p.substr(inner, close - inner)));
  return std::string(p.substr(i, inner - i)) + body + std::string(p.substr(close, *end - close));
}

}  // namespace

Result<std::string> CommaFreePattern(std::string_view p) {
  if (p.find_first_of(",;=") == std::string_view::npos) return std::string(p);
  bool backrefs = false;
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i] == '\\') {
      backrefs = backrefs || (p[i + 1] >= '1' && p[i + 1] <= '9');
      ++i;
    }
  }
  std::string out;
  std::size_t atom_start = std::string::npos;  // in `out`: start of the last atom
  std::size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    std::size_t end = i + 1;
    std::string piece;
    bool is_atom = true;
    if (c == '\\') {
      end = EscapeEnd(p, i);
      piece = EscapeSpecials(p.substr(i, end - i));
    } else if (c == '[') {
      end = ClassEnd(p, i);
      piece = EscapeSpecials(p.substr(i, end - i));
    } else if (c == '(') {
      MOETUNE_ASSIGN_OR_RETURN(piece, CommaFreeGroup(p, i, &end));
    } else if (c == '{') {
      const auto q = ParseCounted(p, i);
      if (!q || !q->has_comma) {
        // {m} or not a quantifier at all: only its specials need escaping.
        end = q ? q->end : i + 1;
        piece = EscapeSpecials(p.substr(i, end - i));
        is_atom = !q.has_value();
      } else {
        if (atom_start == std::string::npos) {
          return Error(ErrorKind::kInvalidArgument,
                       fmt::format("tensor pattern '{}': the repetition {} follows nothing", p,
                                   p.substr(i, q->end - i)));
        }
        if (backrefs) {
          return Error(ErrorKind::kInvalidArgument,
                       fmt::format("tensor pattern '{}': llama.cpp splits -ot values at ',', and "
                                   "{} cannot be rewritten without it in a pattern with "
                                   "back-references; write the repetition out",
                                   p, p.substr(i, q->end - i)));
        }
        end = q->end;
        if (end < p.size() && p[end] == '?') ++end;  // lazy: the same matches exist
        const std::string atom = out.substr(atom_start);
        out.erase(atom_start);
        const int64_t lo = ParseIntInRange(q->min, 0, 1000).value_or(-1);
        const int64_t hi = q->max.empty() ? -1 : ParseIntInRange(q->max, 0, 1000).value_or(-2);
        if (lo < 0 || hi == -2 || (hi >= 0 && hi < lo)) {
          return Error(
              ErrorKind::kInvalidArgument,
              fmt::format("tensor pattern '{}': bad repetition {}", p, p.substr(i, q->end - i)));
        }
        piece = fmt::format("(?:{}){{{}}}", atom, lo);
        piece += hi >= 0 ? fmt::format("(?:(?:{})?){{{}}}", atom, hi - lo)
                         : fmt::format("(?:{})*", atom);
        is_atom = false;
      }
    } else if (IsSpecial(c)) {
      piece = EscapeLiteral(c);
    } else {
      piece = std::string(1, c);
      is_atom = !(c == '*' || c == '+' || c == '?' || c == '|' || c == '^' || c == '$');
    }
    atom_start = is_atom ? out.size() : std::string::npos;
    out += piece;
    i = end;
  }
  return out;
}

Result<std::string> OverridesForBench(const std::vector<OverrideRule>& rules) {
  return Join(rules, ';');
}

Result<std::string> OverridesForCommon(const std::vector<OverrideRule>& rules) {
  return Join(rules, ',');
}

}  // namespace moetune
