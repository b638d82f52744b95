#pragma once
/// Small curves and bars for terminal and Markdown output: a sparkline of
/// tokens/s against N (`▁▂▄█▇▆`) shows the shape of a curve before anyone reads
/// the numbers, and a bar per table row shows each value against the best.
/// Terminals that are not UTF-8 get ASCII (`_.-=+*#@`, `#####`).

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace moetune {

enum class Glyphs { kUnicode, kAscii };

/// One character per value, scaled between the smallest and the largest value
/// (or between 0 and the largest with `from_zero`). A missing or non-finite
/// value (a failed placement) is `×` (`x` in ASCII). Empty input gives "".
std::string Sparkline(const std::vector<std::optional<double>>& values, Glyphs glyphs,
                      bool from_zero = false);

/// What a reader of that sparkline must be told about its scale: "" when its
/// lowest level is zero (`from_zero`, or a smallest value of 0 or less), else
/// "(scale from 412.3, not from 0)" - a sparkline that starts above zero makes
/// small differences look large, and says so (as a cut chart axis does).
std::string SparklineScaleNote(const std::vector<std::optional<double>>& values,
                               bool from_zero = false);

/// A bar of at most `width` cells for `fraction` (clamped to [0, 1]), in
/// eighths of a cell with Unicode, whole cells of '#' in ASCII; padded with
/// spaces to `width` so that columns line up.
std::string HorizontalBar(double fraction, int width, Glyphs glyphs);

/// True when the locale names UTF-8: the first of LC_ALL, LC_CTYPE and LANG
/// that is set and not empty decides (POSIX precedence); none set = not UTF-8
/// (the "C" locale). `getenv_fn` looks a variable up (nullptr = unset).
bool LocaleIsUtf8(const std::function<const char*(const char*)>& getenv_fn);

/// The glyphs for this process's terminal: ASCII when `force_ascii` or when
/// the locale is not UTF-8.
Glyphs TerminalGlyphs(bool force_ascii);

}  // namespace moetune
