#pragma once
/// Text and JSON of `moetune calibrate`: the fitted constants beside their
/// defaults, and predictions beside measurements with the median errors.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "speed/calibration.h"

namespace moetune {

/// Markdown table of points: test, measured, predicted (default and fitted), error.
std::string CalibrationPointsTable(const std::vector<CalibrationPoint>& points, bool show_default);

/// The calibration's own uncertainty: the held-out check, the spread of the
/// repetitions, the tests measured again or still unstable, the machine's load.
std::string CalibrationSelfCheckText(const CalibrationRecord& record);

/// The calibration summary: points, constants that moved, median errors, its
/// own uncertainty.
std::string CalibrationText(const CalibrationRecord& record);

/// Validation: predictions beside measurements and the median absolute error of
/// prefill and decode.
std::string ValidationText(const std::vector<CalibrationPoint>& points);
nlohmann::json ValidationJson(const std::vector<CalibrationPoint>& points);

}  // namespace moetune
