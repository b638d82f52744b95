// libFuzzer target for what `moetune analyze` reads from anywhere (llama-bench
// JSON/JSONL, moetune bench and tune output, journals) and for the analysis
// that follows. Properties beyond "no crash, no sanitizer report": an accepted
// file yields at least one result; the analysis always produces a JSON
// document and text; every recommendation it makes is a value it saw or the
// safety rule's one-layer step above one.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "fuzz_check.h"
#include "report/analysis_report.h"
#include "tune/analysis.h"
#include "tune/measurements.h"
#include "util/utf8.h"

namespace {

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "measurements_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto loaded = ParseMeasurements(text, "fuzz");
  if (!loaded.ok()) return 0;
  Check(!loaded->results.empty(), "accepted file has results");
  AnalysisReport report;
  report.files = loaded->files;
  report.result_count = loaded->results.size();
  report.options.target_ctx = 32768;
  report.analysis = Analyze(loaded->results, report.options);
  std::set<int> seen;
  for (const auto& r : loaded->results) seen.insert(r.config.placement.n_cpu_moe);
  if (report.analysis.recommendation.n_cpu_moe) {
    const int n = *report.analysis.recommendation.n_cpu_moe;
    Check(seen.count(n) || seen.count(n - 1), "recommendation is measured or one step safer");
  }
  bool replaced = false;
  const std::string json = DumpJson(AnalysisJson(report), 2, &replaced);
  Check(IsValidUtf8(json), "JSON is valid UTF-8");
  const std::string shown = AnalysisText(report);
  Check(!shown.empty(), "text rendered");
  return 0;
}
