#pragma once
/// How a prediction's uncertainty (speed/uncertainty.h) is shown: the same band,
/// the word "uncalibrated" and how to calibrate in text, JSON, Markdown and
/// HTML reports, for every output that shows a prediction.

#include <nlohmann/json.hpp>
#include <string>

#include "speed/uncertainty.h"

namespace moetune {

/// {"calibrated", "prefill_band": [low, high], "decode_band": [low, high],
///  "coverage", "points", "basis", "how_to_calibrate" (uncalibrated only)}.
nlohmann::json UncertaintyJson(const PredictionUncertainty& u);

/// The range `tps` x band, "25.1-60.3".
std::string BandRange(double tps, const SpeedBand& band);

/// [low, high] tokens/s of `tps` under `band`.
nlohmann::json BandRangeJson(double tps, const SpeedBand& band);

/// One paragraph: "uncalibrated: on 8 in 10 published runs the measured prefill
/// was x0.50-x2.00 of the prediction and decode x0.55-x1.60 (...); to narrow
/// it, run ..." or the calibrated equivalent.
std::string UncertaintyText(const PredictionUncertainty& u);

/// "uncalibrated" or "calibrated": the word the tables and captions use.
const char* CalibrationWord(const PredictionUncertainty& u);

}  // namespace moetune
