#pragma once
/// What watch raises: an alarm of one of four kinds, each with its evidence
/// (numbers, not adjectives) and the fix, plus the exit codes scripts see.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace moetune {

enum class AlarmKind {
  kOverflow,         // prefill far below the baseline at depth while decode is normal
  kPageFaults,       // major faults under load without RSS growth: RAM too small
  kGpuMemoryTaken,   // another program took GPU memory since the watch started
  kSettingsChanged,  // the server runs with other settings than tuned
};

/// "overflow", "page_faults", "gpu_memory_taken", "settings_changed".
const char* AlarmId(AlarmKind kind);

/// Exit codes of `moetune watch` (and serve) for a raised alarm: overflow 3,
/// page faults 4, GPU memory taken 5, settings changed 6. With several, the
/// smallest (the most urgent) wins.
int AlarmExitCode(AlarmKind kind);

struct Alarm {
  AlarmKind kind = AlarmKind::kOverflow;
  /// Seconds since the watch (or the log's session) started.
  double since_s = 0;
  std::string title;
  std::vector<std::string> evidence;
  std::string fix;
  /// The full corrected llama-server command when there is one (overflow).
  std::vector<std::string> command;
  std::optional<int> n_cpu_moe_from, n_cpu_moe_to;
  /// Machine-readable evidence (ratios, depths, pids, bytes).
  nlohmann::json data = nlohmann::json::object();
};

/// An alarm starting or ending.
struct AlarmEvent {
  bool raised = true;  // false: cleared
  Alarm alarm;
};

/// Every alarm raised during a session, for the final verdict.
struct Verdict {
  std::vector<Alarm> raised;
  int observations = 0;
  /// 0 when no alarm was raised, else the smallest AlarmExitCode.
  int ExitCode() const;
  /// Alarm ids in the order first raised, without repeats.
  std::vector<std::string> Ids() const;
};

}  // namespace moetune
