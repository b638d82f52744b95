#include "report/calibration_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "hw/machine_load.h"
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
  if (show_default) cols.push_back({"spread"});
  MarkdownTable t(cols);
  for (const auto& p : points) {
    std::vector<std::string> row = {p.label, fmt::format("{:.1f}", p.measured_tps)};
    if (show_default) row.push_back(fmt::format("{:.1f}", p.predicted_default_tps));
    row.push_back(fmt::format("{:.1f}", p.predicted_tps));
    row.push_back(p.measured_tps > 0
                      ? fmt::format("{:+.1f}%", (p.predicted_tps / p.measured_tps - 1) * 100)
                      : "-");
    if (show_default) {
      // The spread of the last round, the rounds when measured again.
      std::string spread = fmt::format("{:.1f}%", p.spread * 100);
      if (p.rounds > 1) spread += fmt::format(" ({} rounds)", p.rounds);
      if (p.unstable) spread += " unstable";
      row.push_back(spread);
    }
    t.AddRow(row);
  }
  return t.Render();
}

std::string CalibrationSelfCheckText(const CalibrationRecord& r) {
  const CalibrationUncertainty& u = r.uncertainty;
  std::string o;
  if (u.held_out_folds > 0) {
    o += fmt::format(
        "held-out check ({} folds: each test predicted by constants fitted to the other folds): "
        "median |error| prefill {:.1f}%, decode {:.1f}%\n",
        u.held_out_folds, u.held_out_prefill * 100, u.held_out_decode * 100);
  } else {
    o += fmt::format("held-out check: not made (fewer than {} tests)\n", kHeldOutMinTests);
  }
  o += fmt::format(
      "repetitions spread by {:.1f}% (median over tests), {:.1f}% at most; beyond "
      "{:.0f}% a test is unstable (calibrate measures it again)\n",
      u.spread_median * 100, u.spread_max * 100, kUnstableRepetitionSpread * 100);
  std::vector<std::string> steadied, unstable;
  for (const auto& p : r.points) {
    if (p.unstable)
      unstable.push_back(ForTerminalField(p.label));
    else if (p.rounds > 1)
      steadied.push_back(ForTerminalField(p.label));
  }
  if (!steadied.empty())
    o += fmt::format("measured again, steady then: {}\n", fmt::join(steadied, "; "));
  if (!unstable.empty()) {
    o += fmt::format("still unstable, weight {:.2g} in the fit: {}\n", kUnstableWeight,
                     fmt::join(unstable, "; "));
  }
  if (u.other_cores_max) {
    o += fmt::format("other processes used up to {:.2f} cores during a run{}\n", *u.other_cores_max,
                     *u.other_cores_max > kBusyOtherCores
                         ? " (a busy machine: calibrate again on a quiet one, --wait-quiet)"
                         : "");
  }
  return o;
}

std::string CalibrationText(const CalibrationRecord& r) {
  std::string o =
      fmt::format("calibration of {} with {} on {} ({})\n\n", ForTerminalField(r.model_name),
                  ForTerminalField(r.engine_version), ForTerminalField(r.hostname), r.created_at);
  o += CalibrationPointsTable(r.points, true);
  o += fmt::format("\nmedian |error|: {:.1f}% with the default constants, {:.1f}% calibrated\n\n",
                   r.median_error_default * 100, r.median_error * 100);
  o += CalibrationSelfCheckText(r) + "\n";
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
