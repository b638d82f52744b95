#include "report/curve_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "report/sparkline.h"
#include "report/svg_chart.h"
#include "report/uncertainty_report.h"
#include "report/verdict_text.h"
#include "stats/interval.h"

namespace moetune {
namespace {

std::optional<std::string> RejectionOf(const Analysis& a, int n) {
  const Rejection* r = a.RejectionOf(n);
  if (r == nullptr) return std::nullopt;
  return RejectionReason(*r);
}

// A measured point: the mean with its 95% interval.
ChartPoint MeasuredPoint(double x, const Summary& s, std::string note) {
  ChartPoint p;
  p.x = x;
  p.y = s.mean;
  const Interval iv = MeanInterval(s);
  if (iv.has_spread) {
    // Speeds are never negative: a wide interval of few repetitions stops at 0
    // on the chart, as in the table (FormatNonNegativeRange).
    p.low = std::max(0.0, iv.low);
    p.high = iv.high;
  }
  p.note = std::move(note);
  return p;
}

std::string Describe(const char* what, const Summary& s) {
  const Interval iv = MeanInterval(s);
  if (!iv.has_spread) return fmt::format("{} {:.1f} t/s (n={})", what, s.mean, s.n);
  return fmt::format("{} {:.1f} t/s, 95% CI {} (n={})", what, s.mean,
                     FormatNonNegativeRange(iv.low, iv.high), s.n);
}

std::vector<LegendItem> MeasuredLegend(bool predicted, bool rejected, bool failed, bool cliff,
                                       bool pick) {
  std::vector<LegendItem> l = {{"line c0", "measured (mean)"},
                               {"errbar", "95% confidence interval of the mean"}};
  if (predicted) l.push_back({"line dashed c1", "predicted by the speed model"});
  if (pick) l.push_back({"ring", "the pick"});
  if (rejected) l.push_back({"hollow", "rejected by a rule (reason in the table)"});
  if (failed) l.push_back({"cross", "failed to load or run"});
  if (cliff) l.push_back({"mk-cliff", "cliff: prefill drops far beyond the noise"});
  return l;
}

const char* ShapeMeaning(CurveShape s) {
  switch (s) {
    case CurveShape::kCliff:
      return "prefill falls off a cliff where the GPU runs out of memory; the pick stays on the "
             "safe side of it";
    case CurveShape::kMonotonic:
      return "speed falls steadily as experts move to the GPU: every split overflows, so the "
             "experts stay on the CPU";
    case CurveShape::kPeak:
      return "speed rises to a real optimum";
    case CurveShape::kFlat:
      return "placement makes no difference beyond the noise (e.g. an engine without a GPU)";
  }
  return "";
}

}  // namespace

std::string FormatTps(const std::optional<Summary>& s) {
  return s ? fmt::format("{:.1f}", s->mean) : "";
}

std::string FormatInterval(const std::optional<Summary>& s) {
  if (!s) return "";
  const Interval iv = MeanInterval(*s);
  return iv.has_spread ? FormatNonNegativeRange(iv.low, iv.high) : "";
}

namespace {

// The measured points of one panel of the curve over N: failed, rejected
// (with the reason) and the pick marked.
ChartSeries MeasuredSeries(const Analysis& a, const CurveAtDepth& curve, bool prefill,
                           bool* any_rejected, bool* any_failed) {
  const auto& rec = a.recommendation;
  ChartSeries measured{"measured", 0, false, true, true, {}};
  for (const auto& p : curve.points) {
    const auto& s = prefill ? p.prefill : p.decode;
    const auto reason = RejectionOf(a, p.n_cpu_moe);
    if (p.failed()) {
      ChartPoint cp;
      cp.x = p.n_cpu_moe;
      cp.mark = PointMark::kFailed;
      cp.note = fmt::format("N={}: failed: {}", p.n_cpu_moe, p.failure);
      measured.points.push_back(cp);
      *any_failed = true;
      continue;
    }
    if (!s) continue;
    std::string note =
        fmt::format("N={}: {}", p.n_cpu_moe, Describe(prefill ? "prefill" : "decode", *s));
    ChartPoint cp = MeasuredPoint(p.n_cpu_moe, *s, note);
    if (rec.n_cpu_moe && *rec.n_cpu_moe == p.n_cpu_moe) {
      cp.mark = PointMark::kPick;
      cp.note += " (the pick)";
    } else if (reason) {
      cp.mark = PointMark::kRejected;
      cp.note += "; rejected: " + *reason;
      *any_rejected = true;
    }
    measured.points.push_back(cp);
  }
  return measured;
}

// The predicted points of one panel of the curve over N.
ChartSeries PredictedSeries(const std::vector<PredictedSpeed>& predicted, bool prefill) {
  ChartSeries pred{"predicted", 1, true, false, true, {}};
  for (const auto& p : predicted) {
    const auto& v = prefill ? p.prefill_tps : p.decode_tps;
    if (!v) continue;
    ChartPoint cp;
    cp.x = p.n_cpu_moe;
    cp.y = *v;
    cp.note = fmt::format("N={}: predicted {:.1f} t/s", p.n_cpu_moe, *v);
    pred.points.push_back(cp);
  }
  return pred;
}

// The table's row of N: measured and predicted speeds, and its status.
void AddNCurveRow(const Analysis& a, const NCurveOptions& o, int n, const CurvePoint* p,
                  const PredictedSpeed* pr, DocTable* data) {
  const auto& rec = a.recommendation;
  std::vector<std::string> row = {std::to_string(n)};
  if (p && !p->failed()) {
    row.insert(row.end(), {FormatTps(p->prefill), FormatInterval(p->prefill), FormatTps(p->decode),
                           FormatInterval(p->decode)});
  } else {
    row.insert(row.end(), {"", "", "", ""});
  }
  if (!o.predicted.empty()) {
    // The prediction with the range the machine may measure in.
    auto cell = [&](const std::optional<double>& v, bool prefill) -> std::string {
      if (!v) return "";
      if (!o.uncertainty) return fmt::format("{:.1f}", *v);
      return fmt::format("{:.1f} ({} {})", *v, CalibrationWord(*o.uncertainty),
                         BandRange(*v, prefill ? o.uncertainty->prefill : o.uncertainty->decode));
    };
    row.push_back(pr ? cell(pr->prefill_tps, true) : "");
    row.push_back(pr ? cell(pr->decode_tps, false) : "");
  }
  std::string status, cls;
  const auto reason = RejectionOf(a, n);
  if (p && p->failed()) {
    status = "failed: " + p->failure;
    cls = "failed";
  } else if (rec.n_cpu_moe && *rec.n_cpu_moe == n) {
    status = std::string("pick (") + RecommendationRuleName(rec.rule) + ")";
    cls = "pick";
  } else if (reason) {
    status = "rejected: " + *reason;
    cls = "rejected";
  } else if (!p) {
    status = "predicted only";
  }
  row.push_back(status);
  data->AddRow(std::move(row), cls);
}

// One sketch line: its sparkline, the range of N and, when it does not start
// at zero, its floor.
std::string SketchLine(const char* what, const std::vector<std::optional<double>>& values,
                       const std::string& range) {
  const std::string note = SparklineScaleNote(values);
  return what + Sparkline(values, Glyphs::kUnicode) + "  " + range + (note.empty() ? "" : " ") +
         note;
}

// The cliffs of the curve over N and the pick, marked on its chart.
std::vector<VerticalMarker> NCurveMarkers(const CurveAtDepth* curve, const Recommendation& rec) {
  std::vector<VerticalMarker> markers;
  if (curve != nullptr) {
    for (const auto& c : curve->cliffs) {
      markers.push_back({(c.n_cpu_moe_safe + c.n_cpu_moe_collapsed) / 2.0,
                         fmt::format("cliff x{:.2f}", c.prefill_ratio),
                         VerticalMarker::Kind::kCliff});
    }
  }
  if (rec.n_cpu_moe) {
    markers.push_back(
        {static_cast<double>(*rec.n_cpu_moe),
         fmt::format("pick N={}{}", *rec.n_cpu_moe, rec.measured ? "" : " (not measured)"),
         VerticalMarker::Kind::kPick});
  }
  return markers;
}

// The depth check of N at `depth` when it collapses there; null otherwise.
const DepthCheck* CollapsedAt(const Analysis& a, int n, int depth) {
  for (const auto& d : a.depth_checks) {
    if (d.n_cpu_moe == n && d.depth == depth && d.collapsed) return &d;
  }
  return nullptr;
}

// N -> depth -> point.
using PointsByDepth = std::map<int, std::map<int, const CurvePoint*>>;

// The legend line and the table rows of every N of the depth figure.
void AddDepthRows(const Analysis& a, const PointsByDepth& by_n, Figure* f) {
  const auto& rec = a.recommendation;
  int color = 0;
  for (const auto& [n, depths] : by_n) {
    f->legend.push_back({fmt::format("line c{}", color++ % 6), fmt::format("N={}", n)});
    const CurvePoint* base = depths.begin()->second;
    for (const auto& [depth, p] : depths) {
      if (p->failed()) {
        f->data.AddRow({std::to_string(n), std::to_string(depth), "", "", "", "", "",
                        "fails to run: " + p->failure},
                       "failed");
        continue;
      }
      std::string ratio;
      if (base->prefill && p->prefill && base->prefill->mean > 0 && depth != depths.begin()->first)
        ratio = fmt::format("{:.2f}", p->prefill->mean / base->prefill->mean);
      const DepthCheck* d = CollapsedAt(a, n, depth);
      const bool pick = rec.n_cpu_moe && *rec.n_cpu_moe == n;
      f->data.AddRow({std::to_string(n), std::to_string(depth), FormatTps(p->prefill),
                      FormatInterval(p->prefill), FormatTps(p->decode), FormatInterval(p->decode),
                      ratio, d ? "collapses with depth" : (pick ? "pick" : "")},
                     d ? "rejected" : (pick ? "pick" : ""));
    }
  }
}

}  // namespace

std::optional<Figure> NCurveFigure(const Analysis& a, const NCurveOptions& o) {
  const CurveAtDepth* curve = a.curves.empty() ? nullptr : &a.curves.front();
  if (curve == nullptr && o.predicted.empty()) return std::nullopt;
  const auto& rec = a.recommendation;
  const bool want_prefill =
      a.has_prefill || std::any_of(o.predicted.begin(), o.predicted.end(),
                                   [](const auto& p) { return p.prefill_tps; });
  const bool want_decode = a.has_decode || std::any_of(o.predicted.begin(), o.predicted.end(),
                                                       [](const auto& p) { return p.decode_tps; });
  ChartSpec spec;
  spec.id = o.id;
  spec.described_by = o.id + "-data";
  spec.x_label = "N = --n-cpu-moe (layers whose experts stay on the CPU)";
  const int depth = curve ? curve->depth : 0;
  spec.title = fmt::format("Prefill and decode tokens/s against N at depth {}", depth);
  bool any_rejected = false, any_failed = false;
  Figure f;
  f.id = o.id;
  f.data.header = {"N", "prefill t/s", "prefill 95% CI", "decode t/s", "decode 95% CI"};
  f.data.numeric = {true, true, true, true, true, false};
  if (!o.predicted.empty()) {
    f.data.header.insert(f.data.header.end(), {"predicted prefill", "predicted decode"});
    f.data.numeric = {true, true, true, true, true, true, true, false};
  }
  f.data.header.push_back("status");
  std::vector<std::optional<double>> spark_pp, spark_tg;

  for (int kind = 0; kind < 2; ++kind) {
    const bool prefill = kind == 0;
    if ((prefill && !want_prefill) || (!prefill && !want_decode)) continue;
    ChartPanel panel;
    panel.title = prefill ? "Prefill (prompt processing)" : "Decode (generation)";
    panel.y_label = "tokens/s";
    ChartSeries measured{"measured", 0, false, true, true, {}};
    if (curve != nullptr) measured = MeasuredSeries(a, *curve, prefill, &any_rejected, &any_failed);
    if (!measured.points.empty()) panel.series.push_back(std::move(measured));
    if (!o.predicted.empty()) panel.series.push_back(PredictedSeries(o.predicted, prefill));
    spec.panels.push_back(std::move(panel));
  }
  spec.markers = NCurveMarkers(curve, rec);
  f.legend = MeasuredLegend(!o.predicted.empty(), any_rejected, any_failed,
                            curve && !curve->cliffs.empty(), rec.n_cpu_moe.has_value());

  // The table: every N measured or predicted.
  std::set<int> ns;
  if (curve != nullptr) {
    for (const auto& p : curve->points) ns.insert(p.n_cpu_moe);
  }
  for (const auto& p : o.predicted) ns.insert(p.n_cpu_moe);
  for (int n : ns) {
    const CurvePoint* p = nullptr;
    if (curve != nullptr) {
      for (const auto& q : curve->points) p = q.n_cpu_moe == n ? &q : p;
    }
    const PredictedSpeed* pr = nullptr;
    for (const auto& q : o.predicted) pr = q.n_cpu_moe == n ? &q : pr;
    AddNCurveRow(a, o, n, p, pr, &f.data);
    spark_pp.push_back(p && !p->failed() && p->prefill ? std::optional<double>(p->prefill->mean)
                                                       : std::nullopt);
    spark_tg.push_back(p && !p->failed() && p->decode ? std::optional<double>(p->decode->mean)
                                                      : std::nullopt);
  }
  if (curve != nullptr) {
    const std::string range = ns.empty() ? "" : fmt::format("N {}..{}", *ns.begin(), *ns.rbegin());
    if (a.has_prefill) f.sketch.push_back(SketchLine("prefill ", spark_pp, range));
    if (a.has_decode) f.sketch.push_back(SketchLine("decode  ", spark_tg, range));
    f.caption = fmt::format(
        "Tokens/s against N at depth {} ({}). Curve shape: {}: {}. Read prefill first: the VRAM "
        "boundary shows there long before decode moves.",
        depth, a.settings.empty() ? "settings as measured" : a.settings,
        CurveShapeName(curve->shape), ShapeMeaning(curve->shape));
  } else {
    f.caption = "Predicted tokens/s against N (nothing measured yet).";
  }
  if (!o.predicted.empty() && o.uncertainty) f.caption += " " + UncertaintyText(*o.uncertainty);
  spec.description = f.caption;
  f.svg = RenderSvgChart(spec);
  return f;
}

namespace {

// N -> depth -> point (measured or failed), for every N measured at two depths or more.
PointsByDepth DepthPoints(const Analysis& a) {
  PointsByDepth by_n;
  for (const auto& c : a.curves) {
    for (const auto& p : c.points) {
      if (p.failed() || p.prefill || p.decode) by_n[p.n_cpu_moe][c.depth] = &p;
    }
  }
  for (auto it = by_n.begin(); it != by_n.end();) {
    const auto measured = std::count_if(it->second.begin(), it->second.end(),
                                        [](const auto& d) { return !d.second->failed(); });
    it = measured < 2 ? by_n.erase(it) : ++it;
  }
  return by_n;
}

// The series of one N in one panel, over every depth of the figure: a depth
// this N was not measured at (or not in this panel's test) is a gap, so that
// no line crosses it and no point stands for it; a depth it failed at is a
// cross on the floor.
ChartSeries DepthSeries(const Analysis& a, int n, const std::map<int, const CurvePoint*>& depths,
                        const std::set<int>& grid, bool prefill, int color, bool* any_collapse,
                        bool* any_failed) {
  const auto& rec = a.recommendation;
  const bool pick = rec.n_cpu_moe && *rec.n_cpu_moe == n;
  ChartSeries s{fmt::format("N={}{}", n, pick ? " (pick)" : ""), color, false, true, true, {}};
  for (int depth : grid) {
    const auto it = depths.find(depth);
    const CurvePoint* p = it == depths.end() ? nullptr : it->second;
    const auto* v = p == nullptr ? nullptr : prefill ? &p->prefill : &p->decode;
    if (p != nullptr && p->failed()) {
      ChartPoint cp;
      cp.x = depth;
      cp.mark = PointMark::kFailed;
      cp.note = fmt::format("N={} at depth {}: fails to run: {}", n, depth, p->failure);
      s.points.push_back(cp);
      *any_failed = true;
      continue;
    }
    if (v == nullptr || !*v) {
      ChartPoint gap;
      gap.x = depth;
      gap.mark = PointMark::kGap;
      s.points.push_back(gap);
      continue;
    }
    ChartPoint cp = MeasuredPoint(depth, **v,
                                  fmt::format("N={} at depth {}: {}", n, depth,
                                              Describe(prefill ? "prefill" : "decode", **v)));
    if (const DepthCheck* d = CollapsedAt(a, n, depth); d && prefill) {
      cp.mark = PointMark::kRejected;
      cp.note += fmt::format("; collapses: {:.2f} of depth 0 (healthiest {:.2f})", d->ratio,
                             d->reference_ratio);
      *any_collapse = true;
    } else if (pick && depth == depths.begin()->first) {
      cp.mark = PointMark::kPick;
    }
    s.points.push_back(cp);
  }
  return s;
}

}  // namespace

std::optional<Figure> DepthFigure(const Analysis& a, std::optional<int64_t> target_ctx,
                                  const std::string& id) {
  const PointsByDepth by_n = DepthPoints(a);
  if (by_n.empty()) return std::nullopt;
  // Every depth measured for any N of the figure.
  std::set<int> grid;
  for (const auto& [n, depths] : by_n) {
    for (const auto& d : depths) grid.insert(d.first);
  }
  ChartSpec spec;
  spec.id = id;
  spec.described_by = id + "-data";
  spec.title = "Prefill and decode tokens/s against context depth";
  spec.x_label = "context depth (tokens already in the KV cache)";
  spec.x_format = AxisFormat::kTokens;
  Figure f;
  f.id = id;
  f.data.header = {"N",          "depth",         "prefill t/s",        "prefill 95% CI",
                   "decode t/s", "decode 95% CI", "prefill vs depth 0", "status"};
  f.data.numeric = {true, true, true, true, true, true, true, false};
  bool any_collapse = false, any_failed = false;
  for (int kind = 0; kind < 2; ++kind) {
    const bool prefill = kind == 0;
    if ((prefill && !a.has_prefill) || (!prefill && !a.has_decode)) continue;
    ChartPanel panel;
    panel.title = prefill ? "Prefill" : "Decode";
    panel.y_label = "tokens/s";
    int color = 0;
    for (const auto& [n, depths] : by_n) {
      panel.series.push_back(
          DepthSeries(a, n, depths, grid, prefill, color++ % 6, &any_collapse, &any_failed));
    }
    spec.panels.push_back(std::move(panel));
  }
  if (target_ctx) {
    spec.markers.push_back({static_cast<double>(*target_ctx),
                            fmt::format("target context {}", *target_ctx),
                            VerticalMarker::Kind::kNote});
  }
  AddDepthRows(a, by_n, &f);
  f.legend.push_back({"errbar", "95% confidence interval of the mean"});
  if (any_collapse) f.legend.push_back({"hollow", "prefill collapses with depth: rejected"});
  if (any_failed) f.legend.push_back({"cross", "fails to run at this depth"});
  f.caption =
      "Tokens/s as the context fills, for every N measured at more than one depth. A split that "
      "fits with an empty context can overflow later: its prefill collapses with depth while the "
      "healthy ones fall gently. Lines join measured depths only: a depth an N was not measured "
      "at is a gap.";
  spec.description = f.caption;
  f.svg = RenderSvgChart(spec);
  return f;
}

Figure ComparisonFigure(const DimensionComparison& c, const std::string& id) {
  const std::string what =
      c.dimension == Dimension::kThreads ? "threads (-t)" : "micro-batch size (-ub)";
  ChartSpec spec;
  spec.id = id;
  spec.described_by = id + "-data";
  spec.title = fmt::format("Tokens/s against {} at N={}", what, c.n_cpu_moe);
  spec.x_label = what;
  // Ordinal positions: values such as 64, 512, 2048 read best evenly spaced.
  for (size_t i = 0; i < c.entries.size(); ++i)
    spec.x_ticks.push_back({static_cast<double>(i), std::to_string(c.entries[i].value)});
  spec.x_min = -0.5;
  spec.x_max = static_cast<double>(c.entries.size()) - 0.5;
  Figure f;
  f.id = id;
  f.data.header = {what,         "prefill t/s",   "prefill 95% CI",
                   "decode t/s", "decode 95% CI", "versus the best"};
  f.data.numeric = {true, true, true, true, true, false};
  bool has_pp = false, has_tg = false;
  for (const auto& e : c.entries) {
    has_pp |= e.prefill.has_value();
    has_tg |= e.decode.has_value();
  }
  for (int kind = 0; kind < 2; ++kind) {
    const bool prefill = kind == 0;
    if ((prefill && !has_pp) || (!prefill && !has_tg)) continue;
    ChartPanel panel;
    panel.title = prefill ? "Prefill" : "Decode";
    panel.y_label = "tokens/s";
    // The question is whether the intervals overlap: zoom in on them.
    panel.y_from_zero = false;
    ChartSeries s{what, 0, false, true, true, {}};
    for (size_t i = 0; i < c.entries.size(); ++i) {
      const auto& e = c.entries[i];
      const auto& v = prefill ? e.prefill : e.decode;
      if (!v) continue;
      ChartPoint p = MeasuredPoint(static_cast<double>(i), *v,
                                   fmt::format("{}={}: {}", DimensionName(c.dimension), e.value,
                                               Describe(prefill ? "prefill" : "decode", *v)));
      if (e.value == c.chosen) p.mark = PointMark::kPick;
      s.points.push_back(p);
    }
    panel.series.push_back(std::move(s));
    spec.panels.push_back(std::move(panel));
  }
  for (const auto& e : c.entries) {
    const char* vs = StandingName(e.versus_best);
    f.data.AddRow({std::to_string(e.value), FormatTps(e.prefill), FormatInterval(e.prefill),
                   FormatTps(e.decode), FormatInterval(e.decode),
                   e.value == c.chosen ? std::string(vs) + ", chosen" : std::string(vs)},
                  e.value == c.chosen ? "pick" : "");
  }
  f.legend = {{"line c0", "measured (mean)"},
              {"errbar", "95% confidence interval of the mean"},
              {"ring", fmt::format("chosen: {}", c.chosen)}};
  f.caption = fmt::format(
      "{} at N={}: {}. Overlapping intervals are ties: the noise cannot "
      "separate them.",
      what, c.n_cpu_moe, ComparisonReason(c));
  spec.description = f.caption;
  f.svg = RenderSvgChart(spec);
  return f;
}

}  // namespace moetune
