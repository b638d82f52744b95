#pragma once
/// A small PNG reader for the report tests: 8-bit RGB or RGBA, not interlaced
/// (what headless Chromium writes for screenshots), decoded with zlib. Enough
/// to tell a rendered page from a blank one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moetune::itest {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3, row-major
};

/// The image in `path`, or nullopt with `*error` saying why.
std::optional<RgbImage> ReadPng(const std::string& path, std::string* error);

/// What a screenshot shows, roughly.
struct ImageStats {
  size_t distinct_colors = 0;  // after quantizing each channel to 4 bits
  double non_background = 0;   // fraction of pixels unlike the most common colour
  double mean_luminance = 0;   // 0..255
};
ImageStats Analyze(const RgbImage& image);

}  // namespace moetune::itest
