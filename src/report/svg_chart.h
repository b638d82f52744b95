#pragma once
/// Charts drawn by moetune itself as inline SVG: no library, no script, no
/// network. One x axis shared by one or more stacked panels (prefill above
/// decode, aligned so the same N sits at the same place), measured points with
/// error bars, dashed predicted curves, failed and rejected points with their
/// reasons (as <title> tooltips), the pick highlighted, vertical markers (the
/// cliff, the pick) and horizontal limits (a memory budget).
///
/// Colours are CSS classes (`c0`..`c5` for series, `mark-*`, `grid`, `axis`)
/// resolved by the document's stylesheet (report/html_document.h), so the same
/// SVG reads in light and dark mode and in print. Every number written into the
/// SVG is finite: non-finite input is dropped, never written as "nan".
/// Measured points carry `data-series`, `data-x`, `data-y` attributes so that
/// tests (and curious readers) can find them in the DOM.

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace moetune {

/// Round-numbered axis ticks: a 1, 2 or 5 x 10^k step covering [lo, hi].
struct AxisTicks {
  double min = 0;
  double max = 1;
  double step = 1;
  std::vector<double> values;
};
AxisTicks NiceTicks(double lo, double hi, int target_count = 5);

/// Maps [d0, d1] onto [r0, r1]. A degenerate domain maps everything to the
/// middle of the range; a non-finite value maps to r0.
class LinearScale {
 public:
  LinearScale(double d0, double d1, double r0, double r1) : d0_(d0), d1_(d1), r0_(r0), r1_(r1) {}
  double operator()(double v) const;

 private:
  double d0_, d1_, r0_, r1_;
};

/// How tick labels are written.
enum class AxisFormat {
  kNumber,  // 12, 2.5, 0.25
  kTokens,  // 0, 4K, 32K (K = 1024)
  kGiB,     // bytes shown as GiB: 0, 4, 8
  kMiB,     // bytes shown as MiB: 0, 256, 512
};
/// The label of one tick value.
std::string FormatTick(double value, double step, AxisFormat format);

enum class PointMark {
  kNormal,
  kPick,      // the recommendation: a ring around the point
  kRejected,  // measured but rejected by a rule: hollow
  kFailed,    // no measurement (the placement failed): a cross on the panel's floor
  kGap,       // not measured at this x: the line breaks here and nothing is drawn
};

struct ChartPoint {
  double x = 0;
  std::optional<double> y;          // absent for failed points
  std::optional<double> low, high;  // error bar (e.g. a 95% confidence interval)
  PointMark mark = PointMark::kNormal;
  std::string note;  // tooltip: the value, the reason a point was rejected or failed
};

struct ChartSeries {
  std::string name;
  int color = 0;        // palette index 0..5 (CSS class c0..c5)
  bool dashed = false;  // a predicted curve
  bool show_points = true;
  /// A line through consecutive points with a y; a point without one (failed,
  /// or a kGap) breaks it, so that no line crosses an x that was not measured.
  bool connect = true;
  std::vector<ChartPoint> points;
};

/// A vertical line across every panel at x (the cliff, the pick).
struct VerticalMarker {
  enum class Kind { kCliff, kPick, kNote };
  double x = 0;
  std::string label;
  Kind kind = Kind::kNote;
};

/// A horizontal line across one panel at y (a budget, a limit).
struct HorizontalMarker {
  double y = 0;
  std::string label;
};

struct ChartPanel {
  std::string title;    // "Prefill"
  std::string y_label;  // "tokens/s"
  AxisFormat y_format = AxisFormat::kNumber;
  /// The value axis starts at zero. Without it the axis zooms in on the data
  /// and, when it then starts above zero, says so: a break mark across its
  /// foot and "axis starts at X" (so that no difference looks larger than it is).
  bool y_from_zero = true;
  std::vector<ChartSeries> series;
  std::vector<HorizontalMarker> limits;
};

struct ChartSpec {
  std::string id;            // unique in the document; prefixes the element ids
  std::string title;         // the SVG's <title>
  std::string description;   // the SVG's <desc>: what the chart shows, in words
  std::string described_by;  // extra element id for aria-describedby (the data table)
  std::string x_label;
  AxisFormat x_format = AxisFormat::kNumber;
  /// Ticks at these x values with these labels (ordinal axes such as micro-batch
  /// sizes); empty = round-numbered ticks.
  std::vector<std::pair<double, std::string>> x_ticks;
  std::optional<double> x_min, x_max;  // default: the data's range, padded
  std::vector<ChartPanel> panels;      // stacked top to bottom
  std::vector<VerticalMarker> markers;
  // A narrow view box: on a phone the chart scales less, so its text stays readable.
  int width = 560;
  int panel_height = 200;
};

/// The chart as an `<svg>` element (responsive: viewBox, width 100%).
std::string RenderSvgChart(const ChartSpec& spec);

/// Text for XML/HTML content and attribute values: & < > " ' escaped, control
/// characters other than tab and newline dropped.
std::string XmlEscape(std::string_view text);

/// A number as written into SVG coordinates: fixed, one decimal, never nan/inf
/// (non-finite becomes 0).
std::string SvgNumber(double v);

}  // namespace moetune
