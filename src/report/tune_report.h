#pragma once
/// Text and JSON renderings of a tune (`moetune tune`): the command first, then
/// every decision with its rule and evidence, the comparison with llama.cpp's
/// defaults, the curve reading, the raw measurements. Fields in docs/cli.md.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "plan/placement.h"
#include "report/emit.h"
#include "tune/tune_job.h"
#include "util/result.h"

namespace moetune {

nlohmann::json TuneJson(const TuneReport& report);
std::string TuneText(const TuneReport& report);

/// The line a simulated tune shows as prominently as its verdict, in every
/// rendering (text, HTML, Markdown): "SIMULATED: ..."; "" for a measured tune.
std::string SimulatedBanner(const TuneReport& report);

/// `--emit FORMAT`: the tuned llama-server command as ready-to-paste
/// configuration (report/emit.h), with the model path made absolute (from
/// the current folder when it is relative) and a header naming moetune, the
/// llama.cpp version it was tuned with, the context and the workload.
Result<std::string> TuneEmit(const TuneReport& report, EmitFormat format);

/// The llama.cpp version in `report.engine` ("llama.cpp 0.7.0 (build 11669,
/// commit Debian)"), or the engine line as it is when it names none.
std::string TuneEngineVersion(const TuneReport& report);

}  // namespace moetune
