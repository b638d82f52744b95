#include "report/bench_report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "engine/result_json.h"
#include "util/table.h"
#include "util/units.h"

namespace moetune {

Summary ResultSummary(const RunResult& result) { return Summarize(result.samples_ts); }

std::string FormatBenchMarkdown(const BenchRun& run) {
  using A = MarkdownTable::Align;
  MarkdownTable table({{"model", A::kLeft},
                       {"size", A::kRight},
                       {"backend", A::kLeft},
                       {"threads", A::kRight},
                       {"ngl", A::kRight},
                       {"ncmoe", A::kRight},
                       {"ub", A::kRight},
                       {"test", A::kLeft},
                       {"t/s (mean ± sd)", A::kRight},
                       {"median", A::kRight},
                       {"min-max", A::kRight},
                       {"n", A::kRight}});
  std::string failures;
  for (const auto& r : run.results) {
    const auto& c = r.config;
    const std::string model = std::filesystem::path(c.model).filename().string();
    std::string size = "";
    if (r.ok() && r.record.contains("model_size") && r.record["model_size"].is_number_integer()) {
      size = FormatBytes(Bytes(r.record["model_size"].get<int64_t>()));
    }
    std::string backend =
        r.ok() && r.record.contains("backends") && r.record["backends"].is_string()
            ? r.record["backends"].get<std::string>()
            : "";
    std::vector<std::string> row = {model,
                                    size,
                                    backend,
                                    std::to_string(c.threads),
                                    std::to_string(c.placement.n_gpu_layers),
                                    std::to_string(c.placement.n_cpu_moe),
                                    std::to_string(c.n_ubatch),
                                    c.test_name()};
    if (r.ok()) {
      const Summary s = ResultSummary(r);
      row.push_back(FormatMeanSd(s, 2));
      row.push_back(fmt::format("{:.2f}", s.median));
      row.push_back(fmt::format("{:.2f}-{:.2f}", s.min, s.max));
      row.push_back(std::to_string(s.n));
    } else {
      row.push_back(fmt::format("FAILED: {}", FailureKindName(r.failure->kind)));
      row.insert(row.end(), {"", "", ""});
      failures +=
          fmt::format("- {} ngl={} ncmoe={} t={}: {} ({}): {}\n", c.test_name(),
                      c.placement.n_gpu_layers, c.placement.n_cpu_moe, c.threads,
                      FailureKindName(r.failure->kind), r.failure->exit, r.failure->message);
    }
    table.AddRow(std::move(row));
  }
  std::string out = table.Render();
  if (!failures.empty()) out += "\nFailures:\n" + failures;
  const int loads = run.TotalModelLoads();
  out += fmt::format("\n{} configuration(s), {} engine process(es), {} model load(s)\n",
                     run.results.size(), run.invocations.size(),
                     loads < 0 ? std::string("uncounted") : std::to_string(loads));
  return out;
}

nlohmann::json BenchRunToJson(const BenchRun& run, const EngineInfo& engine, double wall_seconds) {
  using nlohmann::json;
  json results = json::array();
  for (const auto& r : run.results) {
    results.push_back(RunResultToJson(r));
  }
  json invocations = json::array();
  for (const auto& inv : run.invocations) {
    json j = {{"argv", inv.argv},
              {"configs", inv.configs},
              {"model_loads", inv.model_loads < 0 ? json(nullptr) : json(inv.model_loads)},
              {"wall_seconds", inv.wall_seconds},
              {"exit", inv.exit},
              {"timed_out", inv.timed_out}};
    if (inv.failure) j["failure"] = FailureToJson(*inv.failure);
    invocations.push_back(std::move(j));
  }
  const int loads = run.TotalModelLoads();
  return {{"engine",
           {{"dir", engine.dir},
            {"origin", engine.origin},
            {"version_line", engine.version_line},
            {"build_number", engine.build_number},
            {"backends", run.backends}}},
          {"results", results},
          {"invocations", invocations},
          {"model_loads", loads < 0 ? json(nullptr) : json(loads)},
          {"failures", run.FailureCount()},
          {"wall_seconds", wall_seconds}};
}

std::string FormatProgressLine(const BenchProgress& p) {
  const double frac = p.tests_total == 0
                          ? 0
                          : static_cast<double>(p.tests_done) / static_cast<double>(p.tests_total);
  std::string eta = "ETA --";
  if (p.tests_done > 0 && p.tests_done < p.tests_total) {
    const double per = p.elapsed_seconds / static_cast<double>(p.tests_done);
    eta = fmt::format("ETA {:.0f} s", per * static_cast<double>(p.tests_total - p.tests_done));
  } else if (p.tests_done >= p.tests_total && p.tests_total > 0) {
    eta = "done";
  }
  std::string current = p.current;
  if (current.size() > 60) current = current.substr(0, 57) + "...";
  return fmt::format("[{:>3}/{}] {:3.0f}%  process {}/{}  {}  elapsed {:.0f} s, {}", p.tests_done,
                     p.tests_total, frac * 100, p.invocation, p.invocations_total, current,
                     p.elapsed_seconds, eta);
}

}  // namespace moetune
