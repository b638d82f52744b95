#include "report/results_figure.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "report/svg_chart.h"
#include "stats/interval.h"
#include "tune/measurements.h"

namespace moetune {
namespace {

// One field of a configuration that a sweep may vary.
struct Field {
  const char* name;
  std::string (*get)(const RunConfig&);
};

const Field kFields[] = {
    {"ngl", [](const RunConfig& c) { return std::to_string(c.placement.n_gpu_layers); }},
    {"N", [](const RunConfig& c) { return std::to_string(c.placement.n_cpu_moe); }},
    {"ot", [](const RunConfig& c) { return c.placement.OverrideTensor(); }},
    {"t", [](const RunConfig& c) { return std::to_string(c.threads); }},
    {"ub", [](const RunConfig& c) { return std::to_string(c.n_ubatch); }},
    {"b", [](const RunConfig& c) { return std::to_string(c.n_batch); }},
    {"fa", [](const RunConfig& c) { return std::string(FlashAttnName(c.flash_attn)); }},
    {"ctk", [](const RunConfig& c) { return GgmlTypeName(c.type_k); }},
    {"ctv", [](const RunConfig& c) { return GgmlTypeName(c.type_v); }},
    {"lm", [](const RunConfig& c) { return std::string(LoadModeName(c.load_mode)); }},
};

std::string ConfigKey(const RunConfig& c) {
  std::string k;
  for (const auto& f : kFields) k += f.get(c) + '\x1f';
  return k;
}

// The point of one result at `x`, and its row of the data table.
ChartPoint ResultPoint(const RunResult& r, int x, const std::string& label, const std::string& test,
                       DocTable* data) {
  ChartPoint p;
  p.x = x;
  if (!r.ok()) {
    p.mark = PointMark::kFailed;
    p.note = fmt::format("{} {}: failed ({}): {}", label, test, FailureKindName(r.failure->kind),
                         r.failure->message);
    data->AddRow(
        {label, test, "", "", "",
         fmt::format("failed ({}): {}", FailureKindName(r.failure->kind), r.failure->message)},
        "failed");
  } else {
    const Summary sum = ResultStats(r);
    const Interval iv = MeanInterval(sum);
    p.y = sum.mean;
    if (iv.has_spread) {
      p.low = std::max(0.0, iv.low);  // speeds are never negative (as in the table)
      p.high = iv.high;
    }
    p.note = fmt::format("{} {}: {:.2f} t/s (n={})", label, test, sum.mean, sum.n);
    data->AddRow({label, test, fmt::format("{:.2f}", sum.mean),
                  iv.has_spread ? FormatNonNegativeRange(iv.low, iv.high, 2) : "",
                  std::to_string(sum.n), ""});
  }
  return p;
}

}  // namespace

std::vector<std::string> ConfigurationLabels(const std::vector<RunResult>& results) {
  std::vector<bool> varies(std::size(kFields), false);
  for (size_t i = 0; i < std::size(kFields); ++i) {
    std::set<std::string> values;
    for (const auto& r : results) values.insert(kFields[i].get(r.config));
    varies[i] = values.size() > 1;
  }
  std::vector<std::string> out;
  for (const auto& r : results) {
    std::string label;
    for (size_t i = 0; i < std::size(kFields); ++i) {
      if (varies[i]) {
        label += fmt::format("{}{}={}", label.empty() ? "" : " ", kFields[i].name,
                             kFields[i].get(r.config));
      }
    }
    out.push_back(label.empty() ? "all" : label);
  }
  return out;
}

Figure ResultsFigure(const std::vector<RunResult>& results, const ResultsFigureOptions& options) {
  const std::string& id = options.id;
  const bool named = !results.empty() && options.labels.size() == results.size();
  const auto labels = named ? options.labels : ConfigurationLabels(results);
  // Named configurations are told apart by their names (two may share settings).
  auto key_of = [&](size_t i) { return named ? labels[i] : ConfigKey(results[i].config); };
  // Configurations in order of first appearance; tests likewise.
  std::map<std::string, int> config_index;
  std::vector<std::string> config_labels;
  std::vector<std::string> tests;
  std::map<std::string, std::vector<size_t>> by_test;
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string key = key_of(i);
    if (config_index.emplace(key, static_cast<int>(config_labels.size())).second)
      config_labels.push_back(labels[i]);
    const std::string test = results[i].config.test_name();
    if (!by_test.count(test)) tests.push_back(test);
    by_test[test].push_back(i);
  }
  ChartSpec spec;
  spec.id = id;
  spec.described_by = id + "-data";
  spec.title = options.title;
  spec.panel_height = options.panel_height;
  spec.x_label = named ? "configuration" : "configuration (what differs between them)";
  // Label every configuration when there are few; every k-th otherwise.
  // Ordinal positions, half a step of margin on both sides.
  spec.x_min = -0.5;
  spec.x_max = static_cast<double>(config_labels.size()) - 0.5;
  const size_t step = std::max<size_t>(1, (config_labels.size() + 7) / 8);
  for (size_t i = 0; i < config_labels.size(); i += step)
    spec.x_ticks.push_back({static_cast<double>(i), config_labels[i]});
  Figure f;
  f.id = id;
  f.data.header = {"configuration", "test", "t/s", "95% CI", "n", "status"};
  f.data.numeric = {false, false, true, true, true, false};
  bool any_failed = false;
  for (const auto& test : tests) {
    ChartPanel panel;
    panel.title = test;
    panel.y_label = "tokens/s";
    ChartSeries s{test, 0, false, true, false, {}};
    for (size_t i : by_test[test]) {
      const RunResult& r = results[i];
      const int x = config_index[key_of(i)];
      s.points.push_back(ResultPoint(r, x, labels[i], test, &f.data));
      any_failed = any_failed || !r.ok();
    }
    panel.series.push_back(std::move(s));
    spec.panels.push_back(std::move(panel));
  }
  f.caption = fmt::format(
      "Tokens/s of each of the {} configuration(s), one panel per test; bars are 95% confidence "
      "intervals of the mean over the repetitions.",
      config_labels.size());
  spec.description = f.caption;
  f.svg = RenderSvgChart(spec);
  f.legend = {{"dot c0", "measured (mean)"}, {"errbar", "95% confidence interval of the mean"}};
  if (any_failed) f.legend.push_back({"cross", "failed (reason in the table)"});
  return f;
}

}  // namespace moetune
