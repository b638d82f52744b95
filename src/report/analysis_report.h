#pragma once
/// Text and JSON renderings of an Analysis (`moetune analyze`, and the reading
/// part of `moetune tune`). JSON fields are documented in docs/cli.md.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "report/sparkline.h"
#include "tune/analysis.h"
#include "tune/measurements.h"

namespace moetune {

/// Everything `analyze` reports: the analysis, its inputs and options.
struct AnalysisReport {
  Analysis analysis;
  AnalysisOptions options;
  std::vector<LoadedFile> files;
  std::vector<std::string> load_notes;
  std::size_t result_count = 0;
  /// Where the results came from when not from `files` (e.g. "measured by this
  /// tune"); written instead of a file count.
  std::string source;
  /// Text output: sparklines of each curve and a bar per row in these glyphs
  /// (nullopt: tables only).
  std::optional<Glyphs> sketch;
};

/// "92 result(s) from 2 file(s)", or with no files "92 result(s) measured by
/// this tune" (the report's `source`), never "from 0 file(s)".
std::string ResultsOrigin(const AnalysisReport& report);

nlohmann::json AnalysisJson(const AnalysisReport& report);
std::string AnalysisText(const AnalysisReport& report);

/// {"mean", "sd", "n", "ci95": [low, high]} of a summary (sd/ci null when unknown).
nlohmann::json SummaryJson(const Summary& s);

/// {"mean", "sd", "n"} of an estimate (requests/s, tokens/s); null when absent.
nlohmann::json EstimateJson(const std::optional<Estimate>& estimate);

/// One comparison of threads or micro-batch (AnalysisJson's "comparisons[]").
nlohmann::json ComparisonJson(const DimensionComparison& comparison);

}  // namespace moetune
