#pragma once
/// Translations between the engine's vocabulary (RunConfig, llama-bench
/// records) and the speed model's (RunSettings, Measurement).

#include <string>
#include <vector>

#include "engine/bench_jsonl.h"
#include "engine/engine.h"
#include "engine/run_config.h"
#include "speed/calibration_fit.h"
#include "speed/speed_model.h"
#include "util/result.h"

namespace moetune {

/// The speed model's view of one configuration. kInvalidArgument for a cache
/// type the model does not know.
Result<RunSettings> RunSettingsFromConfig(const RunConfig& config);

/// Which figure of a test's repetitions stands for its speed. On a machine
/// shared with other busy processes interference only ever slows a repetition
/// down, so the best one is the least biased estimate of what the machine can do
/// (the doctor's bandwidth probe uses the same rule); `median` and `mean` are the
/// usual summaries.
enum class MeasurementStat { kBest, kMedian, kMean };
Result<MeasurementStat> ParseMeasurementStat(std::string_view text);

/// The figure `stat` of `samples` (0 for none); kBest is BestRepetition
/// (stats/summary.h), the rule analyze and tune read repetitions by too.
double SampleStat(std::vector<double> samples, MeasurementStat stat);

/// A measurement from one llama-bench JSON record (fields read by name; avg_ts
/// when the record has no samples). `rpc` is set when the record's backends
/// include RPC.
Result<Measurement> MeasurementFromRecord(const BenchRecord& record,
                                          MeasurementStat stat = MeasurementStat::kBest);

/// Measurements of the successful results of a run.
std::vector<Measurement> MeasurementsFromRun(const BenchRun& run,
                                             MeasurementStat stat = MeasurementStat::kBest);

/// Merges measurements of the same test (same model file, RPC or not, and
/// label) made in several rounds: their samples are pooled and the figure taken
/// again, so a test measured in rounds interleaved with others sees the same
/// load as they do. Order of first appearance is kept.
std::vector<Measurement> MergeMeasurements(const std::vector<Measurement>& ms,
                                           MeasurementStat stat = MeasurementStat::kBest);

/// "pp256 t=2 ub=256 d=2048 ncmoe=0".
std::string MeasurementLabel(const RunSettings& run);

}  // namespace moetune
