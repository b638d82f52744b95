#pragma once
/// The one reader of moetune's tune and analysis JSON: `moetune tune --json`
/// back into a TuneReport, `moetune analyze --json` (or a tune's "analysis")
/// back into an Analysis, so that a tune recorded once can be rendered again
/// (`moetune report TUNE.json --report FILE`, `--emit FORMAT`) and serve and
/// watch take their command and baseline from it (`--from`), without
/// measuring anything. The inverse of TuneJson and AnalysisJson
/// (report/tune_report.h, report/analysis_report.h; the writer lives in
/// report/ because the files carry the sentences rendered from the typed
/// verdicts, which this reader never parses back): unknown fields are ignored,
/// missing ones take their defaults, and a value of the wrong type is an error
/// that names the field. The file is untrusted input.

#include <nlohmann/json.hpp>
#include <string>

#include "tune/analysis.h"
#include "tune/tune_job.h"
#include "util/result.h"

namespace moetune {

/// A tune's JSON (TuneJson's fields). Errors: not an object, no "command", a
/// field of the wrong type, a measurement that is not a result.
Result<TuneReport> TuneReportFromJson(const nlohmann::json& j);

/// An analysis's JSON (AnalysisJson's fields) back into an Analysis.
Result<Analysis> AnalysisFromJson(const nlohmann::json& j);

/// Reads and parses a tune's JSON file (at most 64 MiB). Errors name the path.
Result<TuneReport> ReadTuneReport(const std::string& path);

}  // namespace moetune
