#include "report/analysis_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "config/server_argv.h"
#include "report/verdict_text.h"
#include "stats/interval.h"
#include "util/table.h"
#include "util/units.h"

namespace moetune {
namespace {

using nlohmann::json;

json OptSummary(const std::optional<Summary>& s) { return s ? SummaryJson(*s) : json(nullptr); }

json CliffJson(const Cliff& c) {
  return {{"n_cpu_moe_safe", c.n_cpu_moe_safe},
          {"n_cpu_moe_collapsed", c.n_cpu_moe_collapsed},
          {"prefill_ratio", c.prefill_ratio}};
}

json CliffsJson(const std::vector<Cliff>& cliffs) {
  json out = json::array();
  for (const auto& c : cliffs) out.push_back(CliffJson(c));
  return out;
}

// The kind and its figures, and the reason a person reads (rendered from them).
json RejectionJson(const Rejection& x) {
  json j = {{"n_cpu_moe", x.n_cpu_moe},
            {"kind", RejectionKindName(x.kind)},
            {"reason", RejectionReason(x)}};
  switch (x.kind) {
    case RejectionKind::kFailed:
      j["failure"] = x.failure;
      break;
    case RejectionKind::kBeyondCliff:
      j["cliff"] = CliffJson(x.cliff);
      break;
    case RejectionKind::kFailsAtDepth:
      j["depth"] = x.depth;
      j["failure"] = x.failure;
      break;
    case RejectionKind::kCollapses:
      j["depth"] = x.depth;
      j["prefill_ratio"] = x.ratio;
      j["reference_n_cpu_moe"] = x.reference_n;
      j["reference_ratio"] = x.reference_ratio;
      break;
    case RejectionKind::kInferredAtDepth:
      j["depth"] = x.depth;
      j["reference_n_cpu_moe"] = x.reference_n;
      j["trouble"] = DepthTroubleName(x.trouble);
      break;
    case RejectionKind::kRecorded:
      break;
  }
  return j;
}

json RecommendationJson(const Recommendation& rec) {
  json j = {{"n_cpu_moe", rec.n_cpu_moe ? json(*rec.n_cpu_moe) : json(nullptr)},
            {"measured", rec.measured},
            {"edge", rec.edge >= 0 ? json(rec.edge) : json(nullptr)},
            {"rule", RecommendationRuleName(rec.rule)},
            {"reason", RecommendationReason(rec)}};
  if (rec.threads) j["threads"] = *rec.threads;
  if (rec.n_ubatch) j["n_ubatch"] = *rec.n_ubatch;
  // The figures the reason is rendered from; a file read without them keeps
  // its reason as it was written.
  if (rec.recorded_reason.empty()) {
    j["best_n_cpu_moe"] = rec.best_n >= 0 ? json(rec.best_n) : json(nullptr);
    j["safest_tie"] = rec.safest_tie >= 0 ? json(rec.safest_tie) : json(nullptr);
    j["read_on"] = ReadOnName(rec.read_on);
    j["workload"] = rec.workload;
    j["unproven"] =
        rec.unproven == Unproven::kNotApplicable ? json(nullptr) : json(UnprovenName(rec.unproven));
    j["target_ctx"] = rec.target_ctx ? json(*rec.target_ctx) : json(nullptr);
    j["stepped_from"] = rec.stepped_from
                            ? json{{"n_cpu_moe", rec.stepped_from->n_cpu_moe},
                                   {"depth", rec.stepped_from->depth},
                                   {"trouble", DepthTroubleName(rec.stepped_from->trouble)}}
                            : json(nullptr);
    j["proven_edge"] =
        rec.proven_edge
            ? json{{"n_cpu_moe", rec.proven_edge->n_cpu_moe},
                   {"gain", rec.proven_edge->gain ? json(*rec.proven_edge->gain) : json(nullptr)}}
            : json(nullptr);
    if (rec.rule == RecommendationRule::kProvenAtTarget) {
      j["unproven_pick"] =
          json{{"n_cpu_moe", rec.unproven_pick}, {"headroom_bytes", rec.unproven_headroom}};
    }
  }
  return j;
}

json CurveJson(const CurveAtDepth& c) {
  json pts = json::array();
  for (const auto& p : c.points) {
    json j = {{"n_cpu_moe", p.n_cpu_moe},
              {"prefill_tps", OptSummary(p.prefill)},
              {"decode_tps", OptSummary(p.decode)},
              {"objective", EstimateJson(p.objective)}};
    if (p.failed()) j["failure"] = p.failure;
    pts.push_back(std::move(j));
  }
  return {{"depth", c.depth},
          {"shape", CurveShapeName(c.shape)},
          {"cliffs", CliffsJson(c.cliffs)},
          {"points", pts}};
}

std::string Tps(const std::optional<Summary>& s) {
  if (!s) return "";
  const Interval iv = MeanInterval(*s);
  if (!iv.has_spread) return fmt::format("{:.1f}", s->mean);
  return fmt::format("{:.1f} ({})", s->mean, FormatNonNegativeRange(iv.low, iv.high));
}

// The time to answer one request of the workload at a point: blank unless both
// of its speeds were measured (an objective read on one speed alone is that
// speed, not a time, and would print as "0.00 s").
std::string Seconds(const CurvePoint& p, const Workload& w) {
  if (p.failed() || !p.prefill || !p.decode || p.prefill->mean <= 0 || p.decode->mean <= 0)
    return "";
  const double s = w.SecondsPerRequest(p.prefill->mean, p.decode->mean);
  return std::isfinite(s) && s > 0 ? FormatSeconds(s) : "";
}

}  // namespace

json ComparisonJson(const DimensionComparison& c) {
  json entries = json::array();
  for (const auto& e : c.entries) {
    entries.push_back({{"value", e.value},
                       {"prefill_tps", OptSummary(e.prefill)},
                       {"decode_tps", OptSummary(e.decode)},
                       {"objective", EstimateJson(e.objective)},
                       {"versus_best", StandingName(e.versus_best)}});
  }
  return {{"dimension", DimensionName(c.dimension)},
          {"n_cpu_moe", c.n_cpu_moe},
          {"entries", entries},
          {"chosen", c.chosen},
          {"reason", ComparisonReason(c)}};
}

json EstimateJson(const std::optional<Estimate>& e) {
  if (!e) return nullptr;
  return {{"mean", e->mean}, {"sd", e->sd ? json(*e->sd) : json(nullptr)}, {"n", e->n}};
}

json SummaryJson(const Summary& s) {
  const Interval iv = MeanInterval(s);
  return {{"mean", s.mean},
          {"sd", s.stddev ? json(*s.stddev) : json(nullptr)},
          {"n", s.n},
          {"median", s.median},
          {"ci95", iv.has_spread ? json::array({iv.low, iv.high}) : json(nullptr)}};
}

json AnalysisJson(const AnalysisReport& r) {
  const Analysis& a = r.analysis;
  json files = json::array();
  for (const auto& f : r.files) {
    files.push_back(
        {{"path", f.path}, {"format", f.format}, {"results", f.results}, {"skipped", f.skipped}});
  }
  json curves = json::array();
  for (const auto& c : a.curves) curves.push_back(CurveJson(c));
  json rejected = json::array();
  for (const auto& x : a.rejected) rejected.push_back(RejectionJson(x));
  json depth = json::array();
  for (const auto& d : a.depth_checks) {
    depth.push_back({{"n_cpu_moe", d.n_cpu_moe},
                     {"depth", d.depth},
                     {"context", d.context},
                     {"prefill_ratio", d.ratio},
                     {"reference_ratio", d.reference_ratio},
                     {"collapsed", d.collapsed}});
  }
  json comps = json::array();
  for (const auto& c : a.comparisons) comps.push_back(ComparisonJson(c));
  std::vector<std::string> notes = r.load_notes;
  notes.insert(notes.end(), a.notes.begin(), a.notes.end());
  json curve = a.curves.empty() ? json(nullptr) : CurveJson(a.curves.front());
  return {{"files", files},
          {"results", r.result_count},
          {"model", a.model},
          {"settings", a.settings},
          {"workload",
           {{"name", r.options.workload.name},
            {"prompt_tokens", r.options.workload.prompt_tokens},
            {"answer_tokens", r.options.workload.answer_tokens}}},
          {"target_ctx", r.options.target_ctx ? json(*r.options.target_ctx) : json(nullptr)},
          {"curve", curve},
          {"curves", curves},
          {"cliffs", CliffsJson(a.cliffs)},
          {"rejected", rejected},
          {"depth_checks", depth},
          {"comparisons", comps},
          {"recommendation", RecommendationJson(a.recommendation)},
          {"notes", notes}};
}

namespace {

// One curve over N at one depth: its shape and cliffs, the sketch, the table.
std::string CurveText(const AnalysisReport& r, const CurveAtDepth& c) {
  const Analysis& a = r.analysis;
  const Recommendation& rec = a.recommendation;
  const bool both = a.has_prefill && a.has_decode;
  std::string o = fmt::format("\nDepth {}: curve {}", c.depth, CurveShapeName(c.shape));
  for (const auto& cl : c.cliffs) {
    o += fmt::format(", cliff between N={} and N={} (prefill x{:.2f})", cl.n_cpu_moe_safe,
                     cl.n_cpu_moe_collapsed, cl.prefill_ratio);
  }
  o += "\n\n";
  double best_pp = 0;
  if (r.sketch) {
    // The shape before the numbers: one character per N, failures as crosses.
    std::vector<std::optional<double>> pp, tg;
    for (const auto& p : c.points) {
      pp.push_back(p.prefill && !p.failed() ? std::optional<double>(p.prefill->mean)
                                            : std::nullopt);
      tg.push_back(p.decode && !p.failed() ? std::optional<double>(p.decode->mean) : std::nullopt);
      if (pp.back()) best_pp = std::max(best_pp, *pp.back());
    }
    const std::string range =
        c.points.empty()
            ? ""
            : fmt::format("  (N {} .. {})", c.points.front().n_cpu_moe, c.points.back().n_cpu_moe);
    // A sketch that does not start at zero names its floor.
    auto line = [&](const char* what, const std::vector<std::optional<double>>& v) {
      const std::string note = SparklineScaleNote(v);
      return what + Sparkline(v, *r.sketch) + range + (note.empty() ? "" : " ") + note + "\n";
    };
    if (a.has_prefill) o += line("  prefill ", pp);
    if (a.has_decode) o += line("  decode  ", tg);
    o += "\n";
  }
  // With a sketch, a bar after each prefill figure shows it against the best.
  const bool bars = r.sketch && best_pp > 0;
  std::vector<MarkdownTable::Column> cols = {{"N"}, {"prefill t/s (95% CI)"}};
  if (bars) cols.push_back({"vs best", MarkdownTable::Align::kLeft});
  cols.insert(cols.end(), {{"decode t/s (95% CI)"},
                           {both ? fmt::format("time to answer ({})", r.options.workload.name) : "",
                            MarkdownTable::Align::kRight},
                           {"", MarkdownTable::Align::kLeft}});
  MarkdownTable t(cols);
  for (const auto& p : c.points) {
    std::string mark;
    if (p.failed()) mark = "FAILED";
    if (c.depth == a.curves.front().depth && rec.n_cpu_moe && p.n_cpu_moe == *rec.n_cpu_moe)
      mark = "<- recommended";
    std::vector<std::string> row = {std::to_string(p.n_cpu_moe), Tps(p.prefill)};
    if (bars) {
      row.push_back(p.prefill && !p.failed()
                        ? HorizontalBar(p.prefill->mean / best_pp, 12, *r.sketch)
                        : std::string());
    }
    row.insert(row.end(), {Tps(p.decode), both ? Seconds(p, r.options.workload) : "", mark});
    t.AddRow(std::move(row));
  }
  o += t.Render();
  return o;
}

}  // namespace

std::string ResultsOrigin(const AnalysisReport& r) {
  if (!r.files.empty())
    return fmt::format("{} result(s) from {} file(s)", r.result_count, r.files.size());
  return fmt::format("{} result(s){}{}", r.result_count, r.source.empty() ? "" : " ", r.source);
}

std::string AnalysisText(const AnalysisReport& r) {
  const Analysis& a = r.analysis;
  const Recommendation& rec = a.recommendation;
  std::string o = fmt::format("moetune analyze: {}; model {}\n", ResultsOrigin(r),
                              a.model.empty() ? "?" : a.model);
  if (!a.settings.empty()) o += fmt::format("Settings along the N curve: {}\n", a.settings);
  o += "\n";
  if (rec.n_cpu_moe) {
    // Written by the one writer of the flag vocabulary (config/server_argv.h).
    std::vector<FlagSetting> settings = {{FlagId::kNCpuMoe, std::to_string(*rec.n_cpu_moe)}};
    if (rec.threads) settings.push_back({FlagId::kThreads, std::to_string(*rec.threads)});
    if (rec.n_ubatch) settings.push_back({FlagId::kUbatch, std::to_string(*rec.n_ubatch)});
    const std::string flags = ShellJoin(SettingsArgv(settings));
    o += fmt::format("Recommendation: {}  ({}{})\n  {}\n", flags, RecommendationRuleName(rec.rule),
                     rec.measured ? "" : ", not measured", RecommendationReason(rec));
  } else {
    o += fmt::format("Recommendation: none ({})\n  {}\n", RecommendationRuleName(rec.rule),
                     RecommendationReason(rec));
  }
  for (const auto& c : a.curves) o += CurveText(r, c);
  if (!a.rejected.empty()) {
    o += "\nRejected:\n";
    for (const auto& x : a.rejected)
      o += fmt::format("- N={}: {}\n", x.n_cpu_moe, RejectionReason(x));
  }
  for (const auto& c : a.comparisons) {
    o += fmt::format("\n{} at N={}: {}\n\n", DimensionName(c.dimension), c.n_cpu_moe,
                     ComparisonReason(c));
    MarkdownTable t({{DimensionName(c.dimension)},
                     {"prefill t/s (95% CI)"},
                     {"decode t/s (95% CI)"},
                     {"", MarkdownTable::Align::kLeft}});
    for (const auto& e : c.entries) {
      t.AddRow({std::to_string(e.value), Tps(e.prefill), Tps(e.decode),
                e.value == c.chosen ? "<- chosen"
                : e.versus_best == Standing::kTied || e.versus_best == Standing::kUndecided
                    ? StandingName(e.versus_best)
                    : ""});
    }
    o += t.Render();
  }
  std::vector<std::string> notes = r.load_notes;
  notes.insert(notes.end(), a.notes.begin(), a.notes.end());
  if (!notes.empty()) {
    o += "\nNotes:\n";
    for (const auto& n : notes) o += "- " + n + "\n";
  }
  return o;
}

}  // namespace moetune
