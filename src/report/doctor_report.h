#pragma once
/// The exporters of `moetune doctor`'s report (doctor/doctor.h): one per format.

#include <nlohmann/json.hpp>
#include <string>

#include "doctor/doctor.h"

namespace moetune {

/// The machine profile's JSON plus "verdicts", "engine", "model",
/// "missing_sources" and "doctor_seconds" (docs/cli.md, "## doctor").
nlohmann::json DoctorReportToJson(const DoctorReport& report);

/// The human-readable report.
std::string FormatDoctorText(const DoctorReport& report);

}  // namespace moetune
