#include "watch/alarm.h"

#include <algorithm>

namespace moetune {

const char* AlarmId(AlarmKind kind) {
  switch (kind) {
    case AlarmKind::kOverflow:
      return "overflow";
    case AlarmKind::kPageFaults:
      return "page_faults";
    case AlarmKind::kGpuMemoryTaken:
      return "gpu_memory_taken";
    case AlarmKind::kSettingsChanged:
      return "settings_changed";
  }
  return "unknown";
}

int AlarmExitCode(AlarmKind kind) {
  switch (kind) {
    case AlarmKind::kOverflow:
      return 3;
    case AlarmKind::kPageFaults:
      return 4;
    case AlarmKind::kGpuMemoryTaken:
      return 5;
    case AlarmKind::kSettingsChanged:
      return 6;
  }
  return 1;
}

int Verdict::ExitCode() const {
  int code = 0;
  for (const auto& a : raised) {
    const int c = AlarmExitCode(a.kind);
    if (code == 0 || c < code) code = c;
  }
  return code;
}

std::vector<std::string> Verdict::Ids() const {
  std::vector<std::string> ids;
  for (const auto& a : raised) {
    const std::string id = AlarmId(a.kind);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

}  // namespace moetune
