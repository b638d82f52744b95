#include "report/svg_bars.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/svg_chart.h"
#include "util/units.h"

namespace moetune {
namespace {

constexpr double kLeft = 12;
constexpr double kRight = 16;
constexpr double kLabelRow = 20;  // the row's label above its bar
constexpr double kBarHeight = 30;
constexpr double kRowGap = 12;
constexpr double kAxis = 40;

int64_t RowTotal(const BarRow& r) {
  int64_t sum = 0;
  for (const auto& s : r.segments) sum += std::max<int64_t>(s.bytes, 0);
  return sum;
}

}  // namespace

std::string RenderStackedBars(const StackedBarSpec& spec) {
  const double width = std::max(spec.width, 240);
  const double x0 = kLeft, x1 = width - kRight;
  const double height =
      static_cast<double>(spec.rows.size()) * (kLabelRow + kBarHeight + kRowGap) + kAxis;
  std::string described = spec.id + "-d";
  if (!spec.described_by.empty()) described += " " + spec.described_by;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart bars\" id=\"{}\" role=\"img\" "
      "viewBox=\"0 0 {} {}\" aria-labelledby=\"{}-t\" aria-describedby=\"{}\">"
      "<title id=\"{}-t\">{}</title><desc id=\"{}-d\">{}</desc>",
      XmlEscape(spec.id), SvgNumber(width), SvgNumber(height), XmlEscape(spec.id),
      XmlEscape(described), XmlEscape(spec.id), XmlEscape(spec.title), XmlEscape(spec.id),
      XmlEscape(spec.description));
  // Gridlines at quarters of each device.
  const double bars_bottom = height - kAxis;
  const LinearScale percent(0, 100, x0, x1);
  for (int v = 0; v <= 100; v += 25) {
    const double x = percent(v);
    o += fmt::format("<line x1=\"{0}\" y1=\"0\" x2=\"{0}\" y2=\"{1}\" class=\"grid\"/>",
                     SvgNumber(x), SvgNumber(bars_bottom));
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{}%</text>",
                     SvgNumber(x), SvgNumber(bars_bottom + 16), v);
  }
  o += fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"alabel\" text-anchor=\"middle\">share of "
      "each device</text>",
      SvgNumber((x0 + x1) / 2), SvgNumber(height - 4));
  double y = 0;
  for (const auto& row : spec.rows) {
    const int64_t length = std::max<int64_t>({row.capacity, RowTotal(row), 1});
    const LinearScale sx(0, static_cast<double>(length), x0, x1);
    o += fmt::format("<g class=\"barrow\" data-row=\"{}\">", XmlEscape(row.label));
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"ptitle\" text-anchor=\"start\">{}</text>",
                     SvgNumber(x0), SvgNumber(y + 15), XmlEscape(row.label));
    const double by = y + kLabelRow;
    double at = 0;
    for (const auto& seg : row.segments) {
      if (seg.bytes <= 0) continue;
      const double a = sx(at), b = sx(at + static_cast<double>(seg.bytes));
      const std::string size = FormatBytes(Bytes(seg.bytes));
      o += fmt::format(
          "<g class=\"seg seg-{}\" data-bytes=\"{}\"><title>{}: {}</title>"
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
          XmlEscape(seg.kind), seg.bytes, XmlEscape(seg.label), size, SvgNumber(a), SvgNumber(by),
          SvgNumber(std::max(b - a, 0.5)), SvgNumber(kBarHeight));
      // The label inside the segment when there is room for it (with its size if that fits too).
      const double room = b - a;
      const std::string long_label = seg.label + " " + size;
      const std::string label = room > 6.5 * static_cast<double>(long_label.size()) + 8 ? long_label
                                : room > 6.5 * static_cast<double>(seg.label.size()) + 8
                                    ? seg.label
                                    : std::string();
      if (!label.empty()) {
        o += fmt::format(
            "<text x=\"{}\" y=\"{}\" class=\"seglabel\" text-anchor=\"middle\">{}</text>",
            SvgNumber((a + b) / 2), SvgNumber(by + kBarHeight / 2 + 4), XmlEscape(label));
      }
      o += "</g>";
      at += static_cast<double>(seg.bytes);
    }
    if (row.capacity > 0) {
      const double cx = sx(static_cast<double>(row.capacity));
      o += fmt::format(
          "<g class=\"capacity\"><title>{}: {}</title><line x1=\"{}\" y1=\"{}\" x2=\"{}\" "
          "y2=\"{}\" class=\"limit\"/></g>",
          XmlEscape(row.label), FormatBytes(Bytes(row.capacity)), SvgNumber(cx), SvgNumber(by - 4),
          SvgNumber(cx), SvgNumber(by + kBarHeight + 4));
    }
    o += "</g>";
    y += kLabelRow + kBarHeight + kRowGap;
  }
  o += "</svg>";
  return o;
}

}  // namespace moetune
