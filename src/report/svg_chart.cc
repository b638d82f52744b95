#include "report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace moetune {
namespace {

constexpr double kLeft = 64;         // room for y tick labels and the rotated y label
constexpr double kRight = 24;        // room for the last x tick label
constexpr double kTitleRow = 22;     // panel title above each plot area
constexpr double kPanelGap = 14;     // between one panel's floor and the next title
constexpr double kBottom = 48;       // x tick labels and the x axis label
constexpr double kPointRadius = 4;   // measured point
constexpr double kRingRadius = 8.5;  // the pick's ring

bool Finite(double v) { return std::isfinite(v); }

struct Range {
  double lo = 0, hi = 0;
  bool any = false;
  void Add(double v) {
    if (!Finite(v)) return;
    if (!any) {
      lo = hi = v;
      any = true;
    } else {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
};

std::string Tooltip(const ChartPoint& p, const ChartSeries& s) {
  if (!p.note.empty()) return p.note;
  if (!p.y) return fmt::format("{}: x={}", s.name, SvgNumber(p.x));
  return fmt::format("{}: x={}, y={}", s.name, SvgNumber(p.x), SvgNumber(*p.y));
}

std::string Line(double x1, double y1, double x2, double y2, std::string_view cls) {
  return fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" class=\"{}\"/>", SvgNumber(x1),
                     SvgNumber(y1), SvgNumber(x2), SvgNumber(y2), cls);
}

// Text anchored at its start, middle or end (an attribute, so that the chart
// lays out the same without the stylesheet).
std::string Text(double x, double y, std::string_view cls, std::string_view anchor,
                 std::string_view text, std::string_view extra = "") {
  return fmt::format("<text x=\"{}\" y=\"{}\" class=\"{}\" text-anchor=\"{}\"{}>{}</text>",
                     SvgNumber(x), SvgNumber(y), cls, anchor, extra, XmlEscape(text));
}

// The x ticks: the caller's (ordinal axes) or round numbers over the domain.
std::vector<std::pair<double, std::string>> XTicks(const ChartSpec& spec, double lo, double hi) {
  if (!spec.x_ticks.empty()) {
    std::vector<std::pair<double, std::string>> out;
    for (const auto& t : spec.x_ticks) {
      if (Finite(t.first) && t.first >= lo - 1e-9 && t.first <= hi + 1e-9) out.push_back(t);
    }
    return out;
  }
  std::vector<std::pair<double, std::string>> out;
  if (spec.x_format == AxisFormat::kTokens && hi - lo >= 2048) {
    // Contexts are powers of two: ticks every 2^k K tokens (8K, 16K, 24K, 32K).
    double step = 1024;
    while ((hi - lo) / step > 6) step *= 2;
    for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 && out.size() < 64; v += step)
      out.push_back({v, FormatTick(v, step, spec.x_format)});
    return out;
  }
  const AxisTicks t = NiceTicks(lo, hi, 6);
  for (double v : t.values) {
    if (v >= lo - 1e-9 && v <= hi + 1e-9) out.push_back({v, FormatTick(v, t.step, spec.x_format)});
  }
  return out;
}

void DrawSeries(const ChartSeries& s, const LinearScale& sx, const LinearScale& sy, double floor_y,
                const std::string& chart_id, std::string* o) {
  const std::string color = fmt::format("c{}", std::clamp(s.color, 0, 5));
  // The line through consecutive points that have a value.
  if (s.connect) {
    std::string pts;
    int count = 0;
    auto flush = [&] {
      if (count >= 2) {
        *o += fmt::format("<polyline class=\"line {}{}\" points=\"{}\"/>", color,
                          s.dashed ? " dashed" : "", pts);
      }
      pts.clear();
      count = 0;
    };
    for (const auto& p : s.points) {
      if (!Finite(p.x) || !p.y || !Finite(*p.y) || p.mark == PointMark::kGap) {
        flush();
        continue;
      }
      pts +=
          fmt::format("{}{},{}", pts.empty() ? "" : " ", SvgNumber(sx(p.x)), SvgNumber(sy(*p.y)));
      ++count;
    }
    flush();
  }
  if (!s.show_points) return;
  for (const auto& p : s.points) {
    if (!Finite(p.x) || p.mark == PointMark::kGap) continue;
    const double x = sx(p.x);
    const std::string tip = Tooltip(p, s);
    if (p.mark == PointMark::kFailed || !p.y || !Finite(*p.y)) {
      // A cross on the floor of the panel: measured nothing, for the reason in the tooltip.
      const double y = floor_y - 7;
      *o += fmt::format(
          "<g class=\"pt-failed\" data-chart=\"{}\" data-series=\"{}\" "
          "data-x=\"{}\"><title>{}</title>"
          "<path class=\"failx\" d=\"M{} {}L{} {}M{} {}L{} {}\"/></g>",
          XmlEscape(chart_id), XmlEscape(s.name), SvgNumber(p.x), XmlEscape(tip), SvgNumber(x - 5),
          SvgNumber(y - 5), SvgNumber(x + 5), SvgNumber(y + 5), SvgNumber(x - 5), SvgNumber(y + 5),
          SvgNumber(x + 5), SvgNumber(y - 5));
      continue;
    }
    const double y = sy(*p.y);
    std::string cls = "pt " + color;
    if (p.mark == PointMark::kRejected) cls += " rejected";
    if (p.mark == PointMark::kPick) cls += " pick";
    *o += fmt::format(
        "<g class=\"{}\" data-chart=\"{}\" data-series=\"{}\" data-x=\"{}\" data-y=\"{}\">"
        "<title>{}</title>",
        cls, XmlEscape(chart_id), XmlEscape(s.name), SvgNumber(p.x), SvgNumber(*p.y),
        XmlEscape(tip));
    if (p.low && p.high && Finite(*p.low) && Finite(*p.high) && *p.high > *p.low) {
      const double y0 = sy(*p.low), y1 = sy(*p.high);
      *o += Line(x, y0, x, y1, "err " + color);
      *o += Line(x - 4, y0, x + 4, y0, "err " + color);
      *o += Line(x - 4, y1, x + 4, y1, "err " + color);
    }
    if (p.mark == PointMark::kPick) {
      *o += fmt::format("<circle class=\"ring\" cx=\"{}\" cy=\"{}\" r=\"{}\"/>", SvgNumber(x),
                        SvgNumber(y), SvgNumber(kRingRadius));
    }
    *o += fmt::format("<circle class=\"dot {}\" cx=\"{}\" cy=\"{}\" r=\"{}\"/></g>",
                      p.mark == PointMark::kRejected ? "hollow" : color, SvgNumber(x), SvgNumber(y),
                      SvgNumber(kPointRadius));
  }
}

}  // namespace

std::string SvgNumber(double v) {
  if (!Finite(v)) v = 0;
  if (std::abs(v) < 0.05) v = 0;  // no "-0.0"
  return fmt::format("{:.1f}", v);
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((u < 0x20 && c != '\n' && c != '\t') || u == 0x7f) break;  // not allowed in XML
        out += c;
    }
  }
  return out;
}

AxisTicks NiceTicks(double lo, double hi, int target_count) {
  AxisTicks t;
  if (!Finite(lo) || !Finite(hi)) lo = 0, hi = 1;
  if (lo > hi) std::swap(lo, hi);
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
    // One value: a range around it (or [0, 1] around zero).
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
    if (lo < 0 && hi > 0 && std::abs(lo) < 1e-9) lo = 0;
  }
  target_count = std::clamp(target_count, 2, 20);
  const double raw = (hi - lo) / target_count;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double mult = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
  t.step = mult * mag;
  t.min = std::floor(lo / t.step + 1e-9) * t.step;
  t.max = std::ceil(hi / t.step - 1e-9) * t.step;
  for (int i = 0; i <= 100; ++i) {
    const double v = t.min + i * t.step;
    if (v > t.max + t.step * 1e-6) break;
    t.values.push_back(std::abs(v) < t.step * 1e-9 ? 0.0 : v);
  }
  return t;
}

double LinearScale::operator()(double v) const {
  if (!Finite(v)) return r0_;
  const double span = d1_ - d0_;
  if (!Finite(span) || std::abs(span) < 1e-300) return (r0_ + r1_) / 2;
  return r0_ + (v - d0_) / span * (r1_ - r0_);
}

std::string FormatTick(double value, double step, AxisFormat format) {
  if (!Finite(value)) return "";
  if (format == AxisFormat::kTokens) {
    if (value == 0) return "0";
    const double k = value / 1024;
    if (std::abs(k - std::round(k)) < 1e-9 && std::abs(k) >= 1) return fmt::format("{:.0f}K", k);
    return fmt::format("{:.0f}", value);
  }
  if (format == AxisFormat::kGiB || format == AxisFormat::kMiB) {
    const double unit = format == AxisFormat::kGiB ? 1073741824.0 : 1048576.0;
    value /= unit;
    step /= unit;
  }
  int decimals = 0;
  if (Finite(step) && step > 0 && step < 1) {
    decimals = std::min(3, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  }
  if (std::abs(value) < 1e-12) value = 0;
  return fmt::format("{:.{}f}", value, decimals);
}

namespace {

// The x domain: every finite x (points, markers, ticks), padded so that no
// point sits on the frame, unless the spec sets its ends.
std::pair<double, double> XDomain(const ChartSpec& spec) {
  Range xr;
  for (const auto& panel : spec.panels) {
    for (const auto& s : panel.series) {
      for (const auto& p : s.points) xr.Add(p.x);
    }
  }
  for (const auto& m : spec.markers) xr.Add(m.x);
  for (const auto& t : spec.x_ticks) xr.Add(t.first);
  double xlo = xr.any ? xr.lo : 0, xhi = xr.any ? xr.hi : 1;
  if (xhi - xlo < 1e-9) xlo -= 1, xhi += 1;
  const double pad = (xhi - xlo) * 0.04;
  xlo = spec.x_min && Finite(*spec.x_min) ? *spec.x_min : xlo - pad;
  xhi = spec.x_max && Finite(*spec.x_max) ? *spec.x_max : xhi + pad;
  if (xhi <= xlo) xhi = xlo + 1;
  return {xlo, xhi};
}

// The y ticks of a panel: its values (from zero when asked), with headroom
// for the top point's ring, rounded in the unit its labels use.
AxisTicks PanelTicks(const ChartPanel& panel) {
  Range yr;
  if (panel.y_from_zero) yr.Add(0);
  for (const auto& s : panel.series) {
    for (const auto& p : s.points) {
      if (p.y) yr.Add(*p.y);
      if (p.high) yr.Add(*p.high);
      if (p.low) yr.Add(*p.low);
    }
  }
  for (const auto& l : panel.limits) yr.Add(l.y);
  double ylo = yr.any ? yr.lo : 0, yhi = yr.any ? yr.hi : 1;
  yhi += (yhi - ylo) * 0.06;  // headroom for the top point's ring
  // Round ticks in the unit the labels use (a MiB axis ticks at 16, 32, 48 MiB).
  const double unit = panel.y_format == AxisFormat::kGiB   ? 1073741824.0
                      : panel.y_format == AxisFormat::kMiB ? 1048576.0
                                                           : 1.0;
  AxisTicks yt = NiceTicks(ylo / unit, yhi / unit, 4);
  yt.min *= unit;
  yt.max *= unit;
  yt.step *= unit;
  for (double& v : yt.values) v *= unit;
  return yt;
}

// A value axis that does not start at zero says so: a break mark across its
// foot (two slanted strokes over a gap in the axis line) and the value it
// starts at, inside the plot above the floor.
std::string CutAxisMark(double x0, double floor_y, const std::string& start) {
  const std::string label = "axis starts at " + start;
  std::string o =
      fmt::format("<g class=\"axis-cut\" data-y-from=\"{}\"><title>{}, not at 0</title>",
                  XmlEscape(start), XmlEscape(label));
  o += fmt::format("<path class=\"axis-gap\" d=\"M{} {}L{} {}L{} {}L{} {}Z\"/>", SvgNumber(x0 - 6),
                   SvgNumber(floor_y - 9), SvgNumber(x0 + 6), SvgNumber(floor_y - 15),
                   SvgNumber(x0 + 6), SvgNumber(floor_y - 10), SvgNumber(x0 - 6),
                   SvgNumber(floor_y - 4));
  o += fmt::format("<path class=\"axis-break\" d=\"M{} {}L{} {}M{} {}L{} {}\"/>", SvgNumber(x0 - 6),
                   SvgNumber(floor_y - 9), SvgNumber(x0 + 6), SvgNumber(floor_y - 15),
                   SvgNumber(x0 - 6), SvgNumber(floor_y - 4), SvgNumber(x0 + 6),
                   SvgNumber(floor_y - 10));
  o += Text(x0 + 10, floor_y - 6, "axnote", "start", label);
  return o + "</g>";
}

// Where the plots lie: the x domain and its pixels, the top of the first plot
// and the bottom of the last.
struct PlotArea {
  double xlo, xhi, x0, x1, top, bottom;
};

// Vertical markers across all panels, labelled in the first panel's title
// row; those outside the x domain are left out.
void DrawMarkers(const std::vector<VerticalMarker>& markers, const LinearScale& sx,
                 const PlotArea& a, std::string* o) {
  int marker_row = 0;
  for (const auto& m : markers) {
    if (!Finite(m.x) || m.x < a.xlo || m.x > a.xhi) continue;
    const double x = sx(m.x);
    const char* cls = m.kind == VerticalMarker::Kind::kCliff  ? "mk-cliff"
                      : m.kind == VerticalMarker::Kind::kPick ? "mk-pick"
                                                              : "mk-note";
    *o += fmt::format("<g class=\"marker {}\" data-x=\"{}\"><title>{}</title>", cls, SvgNumber(m.x),
                      XmlEscape(m.label));
    *o += Line(x, a.top, x, a.bottom, "mline");
    // A cliff's label goes on its left (the pick, on the safe side, labels to the
    // right), unless there is no room.
    const double room = 7.0 * static_cast<double>(m.label.size()) + 8;
    const bool right_half =
        m.kind == VerticalMarker::Kind::kCliff ? x - a.x0 > room : a.x1 - x < room;
    // Labels step down so that neighbouring markers (a cliff next to the pick) do not collide.
    const double label_y = a.top + 12 + 13 * (marker_row++ % 3);
    *o +=
        Text(right_half ? x - 4 : x + 4, label_y, "mlabel", right_half ? "end" : "start", m.label);
    *o += "</g>";
  }
}

}  // namespace

std::string RenderSvgChart(const ChartSpec& spec) {
  const double width = std::max(spec.width, 240);
  const double ph = std::max(spec.panel_height, 80);
  const size_t panels = std::max<size_t>(spec.panels.size(), 1);
  const double height = static_cast<double>(panels) * (kTitleRow + ph) +
                        static_cast<double>(panels - 1) * kPanelGap + kBottom;
  const double x0 = kLeft, x1 = width - kRight;

  const auto [xlo, xhi] = XDomain(spec);
  const LinearScale sx(xlo, xhi, x0, x1);
  const auto xticks = XTicks(spec, xlo, xhi);

  std::string described = spec.id + "-d";
  if (!spec.described_by.empty()) described += " " + spec.described_by;
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" id=\"{}\" role=\"img\" "
      "viewBox=\"0 0 {} {}\" aria-labelledby=\"{}-t\" aria-describedby=\"{}\">"
      "<title id=\"{}-t\">{}</title><desc id=\"{}-d\">{}</desc>",
      XmlEscape(spec.id), SvgNumber(width), SvgNumber(height), XmlEscape(spec.id),
      XmlEscape(described), XmlEscape(spec.id), XmlEscape(spec.title), XmlEscape(spec.id),
      XmlEscape(spec.description));

  double top = 0;
  double plots_top = -1, plots_bottom = 0;
  for (size_t pi = 0; pi < spec.panels.size(); ++pi) {
    const ChartPanel& panel = spec.panels[pi];
    const double py0 = top + kTitleRow, py1 = py0 + ph;
    if (plots_top < 0) plots_top = py0;
    plots_bottom = py1;
    const AxisTicks yt = PanelTicks(panel);
    const LinearScale sy(yt.min, yt.max, py1, py0);

    o += fmt::format("<g class=\"panel\" data-panel=\"{}\">", XmlEscape(panel.title));
    o += Text(x0, top + 15, "ptitle", "start", panel.title);
    for (double v : yt.values) {
      const double y = sy(v);
      o += Line(x0, y, x1, y, "grid");
      o += Text(x0 - 6, y + 4, "tick", "end", FormatTick(v, yt.step, panel.y_format));
    }
    for (const auto& t : xticks) o += Line(sx(t.first), py0, sx(t.first), py1, "grid");
    o += Line(x0, py1, x1, py1, "axis");
    o += Line(x0, py0, x0, py1, "axis");
    if (yt.min > 0) {
      const std::string start = FormatTick(yt.min, yt.step, panel.y_format);
      o += CutAxisMark(x0, py1, panel.y_label.empty() ? start : start + " " + panel.y_label);
    }
    const double ymid = (py0 + py1) / 2;
    o += Text(14, ymid, "alabel", "middle", panel.y_label,
              fmt::format(" transform=\"rotate(-90 14 {})\"", SvgNumber(ymid)));
    for (const auto& l : panel.limits) {
      if (!Finite(l.y)) continue;
      const double y = sy(l.y);
      o += Line(x0, y, x1, y, "limit");
      o += Text(x1 - 4, y - 5, "mlabel", "end", l.label);
    }
    for (const auto& s : panel.series) DrawSeries(s, sx, sy, py1, spec.id, &o);
    o += "</g>";
    top = py1 + kPanelGap;
  }

  // Vertical markers across all panels, labelled in the first panel's title row.
  DrawMarkers(spec.markers, sx, {xlo, xhi, x0, x1, std::max(plots_top, 0.0), plots_bottom}, &o);

  // The shared x axis under the last panel.
  for (const auto& t : xticks) {
    o += Line(sx(t.first), plots_bottom, sx(t.first), plots_bottom + 4, "axis");
    o += Text(sx(t.first), plots_bottom + 18, "tick", "middle", t.second);
  }
  o += Text((x0 + x1) / 2, height - 8, "alabel", "middle", spec.x_label);
  o += "</svg>";
  return o;
}

}  // namespace moetune
