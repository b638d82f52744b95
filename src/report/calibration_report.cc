#include "report/calibration_report.h"

#include <fmt/format.h>

#include <cmath>

#include "speed/calibration_fit.h"
#include "util/table.h"
#include "util/utf8.h"

namespace moetune {

std::string CalibrationPointsTable(const std::vector<CalibrationPoint>& points, bool show_default) {
  using A = MarkdownTable::Align;
  std::vector<MarkdownTable::Column> cols = {{"test", A::kLeft}, {"measured t/s"}};
  if (show_default) cols.push_back({"default model"});
  cols.push_back({show_default ? "calibrated model" : "predicted t/s"});
  cols.push_back({"error"});
  MarkdownTable t(cols);
  for (const auto& p : points) {
    std::vector<std::string> row = {p.label, fmt::format("{:.1f}", p.measured_tps)};
    if (show_default) row.push_back(fmt::format("{:.1f}", p.predicted_default_tps));
    row.push_back(fmt::format("{:.1f}", p.predicted_tps));
    row.push_back(p.measured_tps > 0
                      ? fmt::format("{:+.1f}%", (p.predicted_tps / p.measured_tps - 1) * 100)
                      : "-");
    t.AddRow(row);
  }
  return t.Render();
}

std::string CalibrationText(const CalibrationRecord& r) {
  std::string o =
      fmt::format("calibration of {} with {} on {} ({})\n\n", ForTerminalField(r.model_name),
                  ForTerminalField(r.engine_version), ForTerminalField(r.hostname), r.created_at);
  o += CalibrationPointsTable(r.points, true);
  o += fmt::format("\nmedian |error|: {:.1f}% with the default constants, {:.1f}% calibrated\n\n",
                   r.median_error_default * 100, r.median_error * 100);
  const CalibrationConstants defaults;
  const auto dv = defaults.Values();
  const auto cv = r.constants.Values();
  MarkdownTable t({{"constant", MarkdownTable::Align::kLeft}, {"default"}, {"calibrated"}});
  for (size_t i = 0; i < cv.size(); ++i) {
    bool fitted = false;
    for (const auto& n : r.fitted) fitted = fitted || n == cv[i].first;
    if (!fitted) continue;
    t.AddRow(
        {cv[i].first, fmt::format("{:.4g}", dv[i].second), fmt::format("{:.4g}", cv[i].second)});
  }
  o += "Constants pinned by these runs (the others keep their defaults):\n\n" + t.Render();
  return o;
}

std::string ValidationText(const std::vector<CalibrationPoint>& points) {
  std::string o = CalibrationPointsTable(points, false);
  o += fmt::format("\nmedian |error|: prefill {:.1f}%, decode {:.1f}% ({} points)\n",
                   MedianAbsError(points, true) * 100, MedianAbsError(points, false) * 100,
                   points.size());
  return o;
}

nlohmann::json ValidationJson(const std::vector<CalibrationPoint>& points) {
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : points) {
    pts.push_back({{"test", p.label},
                   {"prefill", p.prefill},
                   {"threads", p.threads},
                   {"n_ubatch", p.n_ubatch},
                   {"n_depth", p.n_depth},
                   {"n_cpu_moe", p.n_cpu_moe},
                   {"rpc", p.rpc},
                   {"measured_tps", p.measured_tps},
                   {"predicted_tps", p.predicted_tps},
                   {"error", p.measured_tps > 0 ? p.predicted_tps / p.measured_tps - 1 : 0.0}});
  }
  return {{"points", pts},
          {"median_abs_error_prefill", MedianAbsError(points, true)},
          {"median_abs_error_decode", MedianAbsError(points, false)}};
}

}  // namespace moetune
