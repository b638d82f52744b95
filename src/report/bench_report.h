#pragma once
/// Output of a benchmark run: a Markdown table in llama-bench's style (mean ±
/// sd, median, min-max of tokens/s per test, failures with their kind and the
/// engine's message) and the JSON form (documented in docs/cli.md "## bench").

#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"
#include "engine/engine_info.h"
#include "engine/result_json.h"
#include "stats/summary.h"

namespace moetune {

/// Statistics of one result's tokens/s samples.
Summary ResultSummary(const RunResult& result);

/// The Markdown table (one row per configuration) followed by failure details.
std::string FormatBenchMarkdown(const BenchRun& run);

/// The JSON document for `moetune bench --json`.
nlohmann::json BenchRunToJson(const BenchRun& run, const EngineInfo& engine, double wall_seconds);

/// "[ 3/12]  25%  pp64 t=2 ...  elapsed 4 s, ETA 12 s" (no newline).
std::string FormatProgressLine(const BenchProgress& progress);

}  // namespace moetune
