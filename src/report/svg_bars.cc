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
  int64_t longest = 1;
  for (const auto& r : spec.rows) longest = std::max({longest, RowTotal(r), r.capacity});
  const double height =
      static_cast<double>(spec.rows.size()) * (kLabelRow + kBarHeight + kRowGap) + kAxis;
  const LinearScale sx(0, static_cast<double>(longest), x0, x1);
  std::string described = spec.id + "-d";
  if (!spec.described_by.empty()) described += " " + spec.described_by;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart bars\" id=\"{}\" role=\"img\" "
      "viewBox=\"0 0 {} {}\" aria-labelledby=\"{}-t\" aria-describedby=\"{}\">"
      "<title id=\"{}-t\">{}</title><desc id=\"{}-d\">{}</desc>",
      XmlEscape(spec.id), SvgNumber(width), SvgNumber(height), XmlEscape(spec.id),
      XmlEscape(described), XmlEscape(spec.id), XmlEscape(spec.title), XmlEscape(spec.id),
      XmlEscape(spec.description));
  // Gridlines in GiB (or MiB for small models) shared by all rows.
  const bool gib = longest >= (int64_t{2} << 30);
  const double unit = gib ? 1073741824.0 : 1048576.0;
  const AxisTicks ticks = NiceTicks(0, static_cast<double>(longest) / unit, 6);
  const double bars_bottom = height - kAxis;
  for (double v : ticks.values) {
    if (v * unit > static_cast<double>(longest) * 1.0001) break;
    const double x = sx(v * unit);
    o += fmt::format("<line x1=\"{0}\" y1=\"0\" x2=\"{0}\" y2=\"{1}\" class=\"grid\"/>",
                     SvgNumber(x), SvgNumber(bars_bottom));
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{}</text>",
                     SvgNumber(x), SvgNumber(bars_bottom + 16),
                     XmlEscape(FormatTick(v, ticks.step, AxisFormat::kNumber)));
  }
  o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"alabel\" text-anchor=\"middle\">{}</text>",
                   SvgNumber((x0 + x1) / 2), SvgNumber(height - 4), gib ? "GiB" : "MiB");
  double y = 0;
  for (const auto& row : spec.rows) {
    o += fmt::format("<g class=\"barrow\" data-row=\"{}\">", XmlEscape(row.label));
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"ptitle\" text-anchor=\"start\">{}</text>",
                     SvgNumber(x0), SvgNumber(y + 15), XmlEscape(row.label));
    const double by = y + kLabelRow;
    double at = 0;
    for (const auto& seg : row.segments) {
      if (seg.bytes <= 0) continue;
      const double a = sx(at), b = sx(at + static_cast<double>(seg.bytes));
      const std::string tip = fmt::format("{}: {}", seg.label, FormatBytes(Bytes(seg.bytes)));
      o += fmt::format(
          "<g class=\"seg seg-{}\" data-bytes=\"{}\"><title>{}</title>"
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
          XmlEscape(seg.kind), seg.bytes, XmlEscape(tip), SvgNumber(a), SvgNumber(by),
          SvgNumber(std::max(b - a, 0.5)), SvgNumber(kBarHeight));
      // Label inside the segment when there is room for it.
      const double room = b - a;
      if (room > 7.0 * static_cast<double>(seg.label.size()) + 8) {
        o += fmt::format(
            "<text x=\"{}\" y=\"{}\" class=\"seglabel\" text-anchor=\"middle\">{}</text>",
            SvgNumber((a + b) / 2), SvgNumber(by + kBarHeight / 2 + 4), XmlEscape(seg.label));
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
