#pragma once
/// One JSON form for a RunResult, shared by `moetune bench --json`, the tune
/// journal and everything that reads them back (analyze, tune's resume, watch).
/// Field names are documented in docs/cli.md ("bench" results).

#include <nlohmann/json.hpp>

#include "engine/run_config.h"
#include "util/result.h"

namespace moetune {

/// {"kind", "message", "exit", "stderr_tail"}.
nlohmann::json FailureToJson(const EngineFailure& failure);

/// The configuration, "ok", and either the measurement ("tokens_per_second"
/// summary, "samples_ts", "samples_ns", "engine_record") or "failure".
nlohmann::json RunResultToJson(const RunResult& result);

/// Reads RunResultToJson's form back (unknown fields ignored, missing ones
/// defaulted). Errors when it is not a result entry.
Result<RunResult> RunResultFromJson(const nlohmann::json& entry);

}  // namespace moetune
