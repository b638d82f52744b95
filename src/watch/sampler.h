#pragma once
/// Live sampling of a running llama-server: each sample scrapes /metrics and
/// /slots (and /props at the start and after a restart), reads the process
/// from /proc when it is local, scans the GPUs, and turns the difference with
/// the previous sample into an Observation (prefill and decode work of the
/// interval, at the context depth the active slot had) plus the resource
/// figures. A counter that goes back, or a process with a new start time, is
/// a restart: that interval gives no observation.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hw/gpu.h"
#include "hw/sysfs.h"
#include "util/result.h"
#include "watch/observation.h"
#include "watch/process_info.h"
#include "watch/server_api.h"
#include "watch/server_client.h"
#include "watch/server_settings.h"

namespace moetune {

struct SamplerOptions {
  ServerUrl url;
  std::chrono::milliseconds timeout{10000};
  /// The server's pid when known (serve, --pid); else looked up by port for
  /// a loopback URL.
  std::optional<pid_t> pid;
  bool find_pid = true;
  SysRoot proc_root{"/"};
  /// GPU scan (NVML); empty: no GPU figures.
  std::function<std::vector<GpuInfo>()> gpu_scan;
};

/// One scrape of the endpoints and the process.
struct Scrape {
  double time_s = 0;  // since the sampler connected
  ServerMetrics metrics;
  std::optional<std::vector<SlotState>> slots;  // nullopt: /slots is off
  std::optional<ProcessSample> process;
};

struct LiveSample {
  double time_s = 0;
  double interval_s = 0;
  Observation observation;
  Scrape now;
  int slots_total = 0;
  int slots_busy = 0;
  std::optional<int64_t> max_depth;  // deepest slot context now
  double requests_processing = 0;
  double requests_deferred = 0;
  bool busy = false;         // work happened in the interval or is in flight
  int64_t major_faults = 0;  // during the interval (local process only)
  int64_t rss_growth_bytes = 0;
  std::optional<int64_t> mem_available_bytes;
  std::vector<GpuInfo> gpus;
  bool gpu_scanned = false;
  bool restarted = false;  // counters reset or the process changed
};

class LiveSampler {
 public:
  /// Checks that the URL is a llama-server with --metrics (messages name
  /// the flag to add), finds the process when local, and takes the first scrape.
  static Result<std::unique_ptr<LiveSampler>> Connect(SamplerOptions options);

  /// A new scrape, compared with the previous one.
  Result<LiveSample> Next();

  const ServerProps& props() const { return props_; }
  std::optional<pid_t> pid() const { return pid_; }
  /// The running server's settings from its command line (local only).
  std::optional<ServerSettings> settings() const;
  const ServerClient& client() const { return client_; }
  const std::vector<std::string>& notes() const { return notes_; }
  /// GPU scan taken at connection (the reference for "taken since start").
  const std::vector<GpuInfo>& first_gpus() const { return first_gpus_; }

 private:
  explicit LiveSampler(SamplerOptions options);
  Result<Scrape> TakeScrape();
  void LocateProcess();

  SamplerOptions options_;
  ServerClient client_;
  ServerProps props_;
  std::optional<pid_t> pid_;
  std::chrono::steady_clock::time_point t0_;
  Scrape last_;
  std::vector<GpuInfo> first_gpus_;
  std::vector<std::string> notes_;
};

/// The observation between two scrapes (exposed for tests).
Observation DeriveObservation(const Scrape& prev, const Scrape& now);

}  // namespace moetune
