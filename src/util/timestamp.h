#pragma once
/// The current time as text, for records that say when they were made.

#include <string>

namespace moetune {

/// UTC in ISO 8601 to the second: "2026-12-01T06:07:00Z".
std::string NowUtcIso8601();

}  // namespace moetune
