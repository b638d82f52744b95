#include "report/check_report.h"

#include <fmt/format.h>

#include "config/server_argv.h"
#include "util/table.h"

namespace moetune {

namespace {

constexpr int64_t kMiB = 1 << 20;

nlohmann::json Triple(int64_t p, int64_t e, bool ok) {
  return {{"predicted_bytes", p},
          {"engine_bytes", e},
          {"difference_bytes", p - e},
          {"within_tolerance", ok}};
}

std::string Diff(int64_t p, int64_t e, bool ok) {
  const double pct = e > 0 ? 100.0 * static_cast<double>(p - e) / static_cast<double>(e) : 0.0;
  return fmt::format("{:.1f} / {:.0f} ({:+.1f}%){}", static_cast<double>(p) / kMiB,
                     static_cast<double>(e) / kMiB, pct, ok ? "" : " !");
}

}  // namespace

nlohmann::json PlanCheckJson(const PlanCheck& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    rows.push_back({{"device", r.device},
                    {"compared_with", r.side},
                    {"model", Triple(r.predicted_model, r.engine_model, r.model_ok)},
                    {"context", Triple(r.predicted_context, r.engine_context, r.context_ok)},
                    {"compute", Triple(r.predicted_compute, r.engine_compute, r.compute_ok)}});
  }
  return {{"n_cpu_moe", c.n_cpu_moe},
          {"ngl", c.ngl},
          {"compute_rule", c.device_kind},
          {"devices", rows},
          {"agrees", c.agrees()},
          {"notes", c.notes},
          {"engine_command", c.argv},
          {"tolerances",
           {{"model", kCheckModelTolerance},
            {"context", kCheckContextTolerance},
            {"compute", kCheckComputeTolerance}}}};
}

std::string PlanCheckText(const PlanCheck& c) {
  std::string o = fmt::format("\nCheck against llama.cpp's dry run (llama-fit-params), {}:\n\n",
                              ShellJoin(SettingsArgv(PlacementSettings(c.placement))));
  MarkdownTable t({{"device", MarkdownTable::Align::kLeft},
                   {"compared with", MarkdownTable::Align::kLeft},
                   {"model MiB (moetune / engine)"},
                   {"context MiB"},
                   {"compute MiB"}});
  for (const auto& r : c.rows) {
    t.AddRow({r.device, r.side, Diff(r.predicted_model, r.engine_model, r.model_ok),
              Diff(r.predicted_context, r.engine_context, r.context_ok),
              Diff(r.predicted_compute, r.engine_compute, r.compute_ok)});
  }
  o += t.Render();
  for (const auto& n : c.notes) o += "note: " + n + "\n";
  const std::string tolerances =
      fmt::format("model {:.0f}%, context {:.0f}%, compute {:.0f}%", kCheckModelTolerance * 100,
                  kCheckContextTolerance * 100, kCheckComputeTolerance * 100);
  o += c.agrees() ? fmt::format("Agreement: within tolerance ({}).\n", tolerances)
                  : fmt::format("Agreement: NO: the cells marked '!' are outside tolerance ({}).\n",
                                tolerances);
  return o;
}

}  // namespace moetune
