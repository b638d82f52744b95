#pragma once
/// Reads `moetune tune --json` output back into a TuneReport, so that a tune
/// recorded once can be rendered again (`moetune report TUNE.json --report
/// FILE`, `--emit FORMAT`) without measuring anything. The inverse of TuneJson
/// and AnalysisJson (report/tune_report.h, report/analysis_report.h): unknown
/// fields are ignored, missing ones take their defaults, and a value of the
/// wrong type is an error that names the field. The file is untrusted input.

#include <nlohmann/json.hpp>
#include <string>

#include "report/tune_report.h"
#include "tune/analysis.h"
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
