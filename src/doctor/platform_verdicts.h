#pragma once
/// The platform findings (hw/platform.h) as doctor verdicts: the one place
/// their text is written. Those of severity "warning" reach tune's checks and
/// its report with the rest of doctor's verdicts.

#include <vector>

#include "doctor/verdicts.h"
#include "hw/platform.h"

namespace moetune {

/// One verdict per finding of PlatformFindings(platform, nvidia_gpus), unsorted.
std::vector<Verdict> PlatformVerdicts(const Platform& platform, int nvidia_gpus);

}  // namespace moetune
