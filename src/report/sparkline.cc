#include "report/sparkline.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace moetune {
namespace {

constexpr std::array<std::string_view, 8> kBlocks = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr std::string_view kAsciiLevels = "_.-=+*#@";
// Partial cells of a bar: 1/8 .. 7/8.
constexpr std::array<std::string_view, 7> kEighths = {"▏", "▎", "▍", "▌", "▋", "▊", "▉"};

bool Usable(const std::optional<double>& v) { return v && std::isfinite(*v); }

// The smallest and largest usable value (0, 0 when there is none).
std::pair<double, double> Extent(const std::vector<std::optional<double>>& values) {
  double lo = 0, hi = 0;
  bool any = false;
  for (const auto& v : values) {
    if (!Usable(v)) continue;
    lo = any ? std::min(lo, *v) : *v;
    hi = any ? std::max(hi, *v) : *v;
    any = true;
  }
  return {lo, hi};
}

}  // namespace

std::string Sparkline(const std::vector<std::optional<double>>& values, Glyphs glyphs,
                      bool from_zero) {
  auto [lo, hi] = Extent(values);
  if (from_zero) lo = std::min(lo, 0.0);
  std::string out;
  for (const auto& v : values) {
    if (!Usable(v)) {
      out += glyphs == Glyphs::kUnicode ? "×" : "x";
      continue;
    }
    // A flat series sits in the middle rather than pretending to be a floor or a peak.
    const double f = hi - lo > 0 ? (*v - lo) / (hi - lo) : 0.5;
    const int level = std::clamp(static_cast<int>(std::lround(f * 7)), 0, 7);
    if (glyphs == Glyphs::kUnicode) {
      out += kBlocks[static_cast<size_t>(level)];
    } else {
      out += kAsciiLevels[static_cast<size_t>(level)];
    }
  }
  return out;
}

std::string SparklineScaleNote(const std::vector<std::optional<double>>& values, bool from_zero) {
  const auto [lo, hi] = Extent(values);
  // A flat series is drawn in the middle, not from a floor: nothing to tell.
  if (from_zero || lo <= 0 || hi - lo <= 0) return "";
  const int decimals = lo >= 100 ? 0 : 1;
  return fmt::format("(scale from {:.{}f}, not from 0)", lo, decimals);
}

std::string HorizontalBar(double fraction, int width, Glyphs glyphs) {
  width = std::max(width, 0);
  if (!std::isfinite(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  std::string out;
  int cells = 0;
  if (glyphs == Glyphs::kAscii) {
    cells = static_cast<int>(std::lround(fraction * width));
    out.append(static_cast<size_t>(cells), '#');
  } else {
    const int eighths = static_cast<int>(std::lround(fraction * width * 8));
    for (int i = 0; i < eighths / 8; ++i) out += "█";
    cells = eighths / 8;
    if (eighths % 8 != 0) {
      out += kEighths[static_cast<size_t>(eighths % 8 - 1)];
      ++cells;
    }
  }
  out.append(static_cast<size_t>(std::max(width - cells, 0)), ' ');
  return out;
}

bool LocaleIsUtf8(const std::function<const char*(const char*)>& getenv_fn) {
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* v = getenv_fn(name);
    if (v == nullptr || *v == '\0') continue;
    std::string s(v);
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // "en_US.UTF-8", "C.utf8", "de_DE.utf-8@euro".
    return s.find("utf-8") != std::string::npos || s.find("utf8") != std::string::npos;
  }
  return false;
}

Glyphs TerminalGlyphs(bool force_ascii) {
  if (force_ascii) return Glyphs::kAscii;
  return LocaleIsUtf8([](const char* n) { return std::getenv(n); }) ? Glyphs::kUnicode
                                                                    : Glyphs::kAscii;
}

}  // namespace moetune
