#include "util/units.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "util/text.h"

namespace moetune {

std::string FormatBytes(Bytes b) {
  const double v = static_cast<double>(b.count());
  const double a = std::fabs(v);
  if (a >= 1024.0 * 1024.0 * 1024.0)
    return fmt::format("{:.2f} GiB", v / (1024.0 * 1024.0 * 1024.0));
  if (a >= 1024.0 * 1024.0) return fmt::format("{:.1f} MiB", v / (1024.0 * 1024.0));
  if (a >= 1024.0) return fmt::format("{:.1f} KiB", v / 1024.0);
  return fmt::format("{} B", b.count());
}

std::string FormatMiB(Bytes b, int decimals) { return fmt::format("{:.{}f}", b.mib(), decimals); }

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "1.5 GiB" into (1.5, "gib"). Returns false when no number leads.
bool SplitNumber(std::string_view text, double* number, std::string* suffix) {
  text = Trim(text);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return false;
  std::string num(text.substr(0, i));
  char* end = nullptr;
  *number = std::strtod(num.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(*number)) return false;
  *suffix = Lower(Trim(text.substr(i)));
  return true;
}

}  // namespace

Result<Bytes> ParseBytes(std::string_view text) {
  double n = 0;
  std::string suffix;
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("cannot read size '{}': {}; write e.g. 12GiB, 11500MiB, 12G or 4096 "
                             "(plain numbers are bytes)",
                             text, why));
  };
  if (!SplitNumber(text, &n, &suffix)) return bad("no number");
  double mult = 0;
  if (suffix.empty() || suffix == "b")
    mult = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib")
    mult = 1024.0;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib")
    mult = 1024.0 * 1024.0;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib")
    mult = 1024.0 * 1024.0 * 1024.0;
  else if (suffix == "t" || suffix == "tb" || suffix == "tib")
    mult = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else
    return bad(fmt::format("unknown unit '{}'", suffix));
  const double v = n * mult;
  if (v > 9.0e18) return bad("too large");
  return Bytes(static_cast<int64_t>(std::llround(v)));
}

Result<int64_t> ParseTokenCount(std::string_view text) {
  double n = 0;
  std::string suffix;
  auto bad = [&](const std::string& why) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("cannot read token count '{}': {}; write e.g. 32768 or 32K", text, why));
  };
  if (!SplitNumber(text, &n, &suffix)) return bad("no number");
  double mult = 0;
  if (suffix.empty())
    mult = 1;
  else if (suffix == "k")
    mult = 1024;
  else if (suffix == "m")
    mult = 1024.0 * 1024.0;
  else
    return bad(fmt::format("unknown unit '{}'", suffix));
  const double v = n * mult;
  if (v < 1 || v > 1e9) return bad("out of range 1..1e9");
  return static_cast<int64_t>(std::llround(v));
}

std::string FormatSeconds(double s) {
  const double a = std::fabs(s);
  if (a >= 1.0) return fmt::format("{:.2f} s", s);
  if (a >= 1e-3) return fmt::format("{:.1f} ms", s * 1e3);
  return fmt::format("{:.0f} us", s * 1e6);
}

std::string FormatRate(double tps) { return fmt::format("{:.1f} t/s", tps); }

}  // namespace moetune
