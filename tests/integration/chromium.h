#pragma once
/// Headless Chromium for the report tests: opens a report the way a person
/// would and checks everything the reports promise: the script ran under the
/// page's Content-Security-Policy, the browser printed no console message (a
/// blocked request would be one), the page asked the network for nothing
/// (Chromium's own net log), the charts are in the DOM with the expected
/// number of points, and screenshots at desktop and phone widths show a
/// rendered page in light mode. Chromium is Debian's package
/// (scripts/install-deps.sh) or $MOETUNE_CHROMIUM.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "png_image.h"
#include "support.h"

namespace moetune::itest {

std::string ReadText(const std::string& path);

/// The chromium executable ("" when there is none).
std::string ChromiumBinary();

struct PageLoad {
  int exit_code = -1;
  std::string dom;
  std::vector<std::string> console;   // every console message, CSP violations included
  std::vector<std::string> requests;  // URLs the page asked the network stack for
  std::string log;                    // stderr, for failure messages
};

/// Loads `html` (a file) in a fresh profile and dumps its DOM.
PageLoad Load(const std::string& html, const TempDir& dir);

/// A screenshot of `html` at width x height (dark: forced dark mode), kept as
/// `name`.png in $MOETUNE_REPORT_SHOTS when that is set.
std::optional<RgbImage> Screenshot(const std::string& html, int width, int height, bool dark,
                                   const TempDir& dir, const std::string& name);

size_t CountMatches(const std::string& text, const std::string& pattern);

struct Expect {
  std::map<std::string, size_t> points;  // chart id -> measured points
  std::map<std::string, size_t> failed;  // chart id -> failed placements
  size_t figures = 0;
};

/// Everything the issue asks of one HTML report (gtest assertions). With
/// $MOETUNE_REPORT_SHOTS set, the report and its screenshots are kept there
/// as `name`.html and `name`-desktop.png / -phone.png.
void CheckReport(const std::string& html, const Expect& want, const std::string& name);

}  // namespace moetune::itest
