#include "png_image.h"

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

namespace moetune::itest {
namespace {

uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

int Paeth(int a, int b, int c) {
  const int p = a + b - c;
  const int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

// A byte of a filtered row with the row's filter undone: `x` the filtered
// byte, `a` the byte to its left, `b` the one above, `c` above the left one.
uint8_t Unfilter(int filter, int x, int a, int b, int c) {
  int v = x;
  switch (filter) {
    case 1:
      v = x + a;
      break;
    case 2:
      v = x + b;
      break;
    case 3:
      v = x + (a + b) / 2;
      break;
    case 4:
      v = x + Paeth(a, b, c);
      break;
    default:
      break;
  }
  return static_cast<uint8_t>(v & 0xff);
}

}  // namespace

std::optional<RgbImage> ReadPng(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (data.size() < 8 || !std::equal(kSignature, kSignature + 8, data.begin())) {
    *error = path + ": not a PNG file";
    return std::nullopt;
  }
  RgbImage img;
  int color_type = -1, channels = 0;
  std::vector<uint8_t> idat;
  for (size_t at = 8; at + 12 <= data.size();) {
    const uint32_t len = Be32(&data[at]);
    if (at + 12 + len > data.size()) break;
    const std::string type(data.begin() + static_cast<long>(at) + 4,
                           data.begin() + static_cast<long>(at) + 8);
    const uint8_t* body = &data[at + 8];
    if (type == "IHDR" && len >= 13) {
      img.width = static_cast<int>(Be32(body));
      img.height = static_cast<int>(Be32(body + 4));
      const int depth = body[8];
      color_type = body[9];
      if (depth != 8 || (color_type != 2 && color_type != 6) || body[12] != 0) {
        *error = path + ": only 8-bit RGB/RGBA non-interlaced PNGs are read";
        return std::nullopt;
      }
      channels = color_type == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat.insert(idat.end(), body, body + len);
    } else if (type == "IEND") {
      break;
    }
    at += 12 + len;
  }
  if (channels == 0 || img.width <= 0 || img.height <= 0 || img.width > 20000 ||
      img.height > 20000) {
    *error = path + ": no usable IHDR";
    return std::nullopt;
  }
  const size_t stride = static_cast<size_t>(img.width) * static_cast<size_t>(channels);
  std::vector<uint8_t> raw((stride + 1) * static_cast<size_t>(img.height));
  uLongf raw_len = static_cast<uLongf>(raw.size());
  if (uncompress(raw.data(), &raw_len, idat.data(), static_cast<uLong>(idat.size())) != Z_OK ||
      raw_len != raw.size()) {
    *error = path + ": the image data does not inflate to the expected size";
    return std::nullopt;
  }
  // Undo the per-row filters (PNG specification, section 9).
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  img.rgb.reserve(static_cast<size_t>(img.width) * static_cast<size_t>(img.height) * 3);
  for (int y = 0; y < img.height; ++y) {
    const uint8_t* row = &raw[static_cast<size_t>(y) * (stride + 1)];
    const int filter = row[0];
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(channels) ? cur[i - channels] : 0;
      const int c = i >= static_cast<size_t>(channels) ? prev[i - channels] : 0;
      cur[i] = Unfilter(filter, row[1 + i], a, prev[i], c);
    }
    for (int px = 0; px < img.width; ++px) {
      for (int ch = 0; ch < 3; ++ch)
        img.rgb.push_back(
            cur[static_cast<size_t>(px) * static_cast<size_t>(channels) + static_cast<size_t>(ch)]);
    }
    std::swap(prev, cur);
  }
  return img;
}

ImageStats Analyze(const RgbImage& image) {
  ImageStats s;
  std::map<uint32_t, size_t> counts;
  double lum = 0;
  const size_t n = image.rgb.size() / 3;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t r = image.rgb[3 * i], g = image.rgb[3 * i + 1], b = image.rgb[3 * i + 2];
    ++counts[(uint32_t{r} >> 4) << 8 | (uint32_t{g} >> 4) << 4 | (uint32_t{b} >> 4)];
    lum += 0.2126 * r + 0.7152 * g + 0.0722 * b;
  }
  size_t most = 0;
  for (const auto& [c, k] : counts) most = std::max(most, k);
  s.distinct_colors = counts.size();
  s.non_background = n ? 1.0 - static_cast<double>(most) / static_cast<double>(n) : 0;
  s.mean_luminance = n ? lum / static_cast<double>(n) : 0;
  return s;
}

}  // namespace moetune::itest
