#include "util/text.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace moetune {
namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

template <typename T>
std::optional<T> ParseWhole(std::string_view s) {
  if (s.empty()) return std::nullopt;
  T v{};
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

}  // namespace

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = nl + 1;
  }
  return out;
}

std::vector<std::string> SplitList(std::string_view text, char sep) {
  std::vector<std::string> out;
  for (std::size_t start = 0;;) {
    const std::size_t at = text.find(sep, start);
    out.emplace_back(
        text.substr(start, at == std::string_view::npos ? text.size() - start : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string_view NextWord(std::string_view* rest) {
  std::size_t b = 0;
  while (b < rest->size() && IsSpace((*rest)[b])) ++b;
  std::size_t e = b;
  while (e < rest->size() && !IsSpace((*rest)[e])) ++e;
  const std::string_view word = rest->substr(b, e - b);
  rest->remove_prefix(e);
  return word;
}

std::string_view LeadingDigits(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') ++n;
  return s.substr(0, n);
}

bool AllDigits(std::string_view s) { return !s.empty() && LeadingDigits(s).size() == s.size(); }

std::optional<int64_t> ParseInt64(std::string_view s) { return ParseWhole<int64_t>(s); }

std::optional<uint64_t> ParseUint64(std::string_view s) {
  // from_chars would accept nothing else either, but say it: no sign at all.
  if (!s.empty() && s.front() == '-') return std::nullopt;
  return ParseWhole<uint64_t>(s);
}

std::optional<int64_t> ParseIntInRange(std::string_view s, int64_t lo, int64_t hi) {
  const auto v = ParseInt64(s);
  if (!v || *v < lo || *v > hi) return std::nullopt;
  return v;
}

std::optional<double> ParseDouble(std::string_view s) {
  // from_chars accepts "inf", "nan" and hex-less exponents; only finite
  // decimal numbers are wanted, so letters other than e/E are refused first.
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) {
      return std::nullopt;
    }
  }
  const auto v = ParseWhole<double>(s);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string Truncate(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  std::size_t cut = max_bytes;
  // Step back over UTF-8 continuation bytes (10xxxxxx) to a character start.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "...";
}

}  // namespace moetune
