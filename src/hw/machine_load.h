#pragma once
/// What else runs on the machine while moetune measures: the CPU time of
/// other processes over an interval, in cores (the machine's busy time from
/// /proc/stat less this process's and its waited-for children's, from
/// getrusage). A measurement taken while others kept a core busy is noise,
/// however carefully it was repeated: tune, bench and calibrate measure it
/// around every engine run, warn before the first run and in the results, and
/// `--wait-quiet` waits (bounded) for a quiet machine first.

#include <optional>
#include <string>

#include "hw/sysfs.h"

namespace moetune {

/// The machine's CPU clock from the first line of /proc/stat.
struct CpuClock {
  double busy_seconds = 0;   // user, nice, system, irq, softirq, steal over all CPUs
  double total_seconds = 0;  // the same plus idle and iowait
};
/// nullopt when /proc/stat cannot be read or parsed.
std::optional<CpuClock> ReadCpuClock(const SysRoot& root);

/// CPU seconds of this process and of its children that were waited for.
double OwnCpuSeconds();

/// Other processes' CPU use over an interval.
struct MachineLoad {
  double seconds = 0;      // wall time of the interval
  double other_cores = 0;  // other processes' CPU seconds per second (0.5 = half a core)
};

/// The threshold of a busy machine: other processes used more than a quarter
/// of a core on average. An idle desktop (a browser tab, the compositor) stays
/// well under it; a compile, a video call or another model run is over it, and
/// on a machine with few cores that is a measurable share of llama.cpp's
/// threads.
inline constexpr double kBusyOtherCores = 0.25;
inline bool IsBusy(const MachineLoad& load) { return load.other_cores > kBusyOtherCores; }

/// Measures the interval between Start and Stop.
class LoadMeter {
 public:
  explicit LoadMeter(SysRoot root = SysRoot("/"));
  void Start();
  /// nullopt when /proc/stat could not be read at either end.
  std::optional<MachineLoad> Stop() const;

 private:
  SysRoot root_;
  std::optional<CpuClock> start_clock_;
  double start_own_ = 0;
  double start_wall_ = 0;
};

/// Other processes' load over the next `seconds` (sleeps that long).
std::optional<MachineLoad> SampleLoad(double seconds, const SysRoot& root = SysRoot("/"));

/// What waiting for a quiet machine found.
struct QuietWait {
  std::optional<MachineLoad> last;  // the last sample (nullopt: no /proc/stat)
  double waited_seconds = 0;
  bool quiet = false;
};
/// Samples `window` seconds at a time until a window is quiet or
/// `max_seconds` have passed (at least one window is sampled).
QuietWait WaitForQuiet(double max_seconds, double window = 2.0, const SysRoot& root = SysRoot("/"));

/// "other processes used 1.3 cores on average over 2.0 s".
std::string MachineLoadText(const MachineLoad& load);

}  // namespace moetune
