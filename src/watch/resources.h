#pragma once
/// The two resource alarms of a local server:
///
/// Page faults. Major faults are pages read back from disk. With the CPU-side
/// experts memory-mapped and larger than the RAM the page cache can give
/// them, every token reads experts from disk again: major faults keep coming
/// while the server works, and its resident size does not grow (pages are
/// evicted as fast as they come in). Warm-up after a start also faults, but
/// the resident size grows then; that is the difference watched here. Raised
/// after 3 busy samples in a row with >= 100 major faults (and >= 20/s) and
/// RSS growth under max(1%, 64 MiB); cleared after 3 busy samples with fewer
/// than 10.
///
/// GPU memory taken. A program that starts after the server and holds GPU
/// memory can push a configuration that fitted over the edge (silently, with
/// unified memory or Windows' sysmem fallback). Raised when a process that was
/// not on the GPU when watching began (and is not the server) holds >= 256 MiB
/// in 2 scans in a row, or, when the driver does not list processes, when free
/// memory fell by >= 512 MiB more than the server itself grew; cleared after 2
/// scans without.

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hw/gpu.h"

namespace moetune {

struct FaultSample {
  double time_s = 0;
  double interval_s = 0;
  bool busy = false;         // requests were processed during the interval
  int64_t major_faults = 0;  // during the interval
  int64_t rss_bytes = 0;
  int64_t rss_growth_bytes = 0;  // during the interval
  std::optional<int64_t> mem_available_bytes;
};

struct FaultRules {
  int64_t min_faults = 100;
  double min_faults_per_second = 20;
  double max_rss_growth_fraction = 0.01;
  int64_t max_rss_growth_bytes = 64ll << 20;
  int64_t quiet_faults = 10;
  int to_raise = 3;
  int to_clear = 3;
};

class PageFaultDetector {
 public:
  explicit PageFaultDetector(FaultRules rules = {}) : rules_(rules) {}
  void Add(const FaultSample& s);
  bool active() const { return active_; }
  bool raised_now() const { return raised_now_; }
  bool cleared_now() const { return cleared_now_; }
  /// The faulting samples behind the alarm.
  const std::vector<FaultSample>& evidence() const { return evidence_; }

 private:
  FaultRules rules_;
  std::vector<FaultSample> run_, evidence_;
  int quiet_ = 0;
  bool active_ = false, raised_now_ = false, cleared_now_ = false;
};

/// A program holding GPU memory that it did not hold when watching began.
struct GpuIntruder {
  int gpu_index = 0;
  std::string gpu_name;
  std::optional<uint32_t> pid;  // nullopt: the driver lists no processes
  std::string name;
  int64_t bytes = 0;
  int64_t free_at_start = 0, free_now = 0;
};

struct GpuRules {
  int64_t min_process_bytes = 256ll << 20;
  int64_t min_free_drop_bytes = 512ll << 20;
  int to_raise = 2;
  int to_clear = 2;
};

class GpuMemoryDetector {
 public:
  explicit GpuMemoryDetector(GpuRules rules = {}) : rules_(rules) {}
  /// One scan. `own` are the server's pids (never intruders). The first scan
  /// is the reference.
  void Add(const std::vector<GpuInfo>& gpus, const std::set<uint32_t>& own);
  bool active() const { return active_; }
  bool raised_now() const { return raised_now_; }
  bool cleared_now() const { return cleared_now_; }
  const std::vector<GpuIntruder>& intruders() const { return intruders_; }
  bool has_reference() const { return has_reference_; }

 private:
  GpuRules rules_;
  bool has_reference_ = false;
  std::map<int, std::set<uint32_t>> start_pids_;  // by GPU index
  std::map<int, int64_t> start_free_, start_own_;
  std::vector<GpuIntruder> intruders_;
  int seen_ = 0, gone_ = 0;
  bool active_ = false, raised_now_ = false, cleared_now_ = false;
};

}  // namespace moetune
