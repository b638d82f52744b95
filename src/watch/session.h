#pragma once
/// One watched session: the detectors, the settings check and the alarms
/// with their evidence and fix. Live watch, serve and `watch --log` all feed a
/// WatchSession, so the same observations give the same verdict.

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hw/gpu.h"
#include "watch/alarm.h"
#include "watch/baseline.h"
#include "watch/observation.h"
#include "watch/overflow.h"
#include "watch/resources.h"
#include "watch/server_api.h"
#include "watch/server_settings.h"

namespace moetune {

struct SessionOptions {
  /// Measured or predicted expectation; null: the session's first requests.
  std::shared_ptr<const Baseline> baseline;
  /// The tuned settings (tune/plan JSON); nullopt: the first settings seen
  /// are the reference for "restarted with other settings".
  std::optional<ServerSettings> expected;
  /// Layers of the model (caps the proposed --n-cpu-moe), when known.
  std::optional<int> n_layer;
  OverflowRules overflow;
  FaultRules faults;
  GpuRules gpu;
};

class WatchSession {
 public:
  explicit WatchSession(SessionOptions options);

  /// The settings the server runs with (its command line, or what /props
  /// says when the process is not visible). The first call sets the
  /// reference when no tuned settings were given; `restarted` marks a call
  /// after the server was seen to restart.
  std::vector<AlarmEvent> SetServerSettings(const ServerSettings& actual, double time_s,
                                            bool restarted);
  /// The same from /props only (remote server): model, slots, context per slot.
  std::vector<AlarmEvent> SetServerProps(const ServerProps& props, double time_s, bool restarted);

  std::vector<AlarmEvent> AddObservation(const Observation& o, OverflowCheck* check = nullptr);
  std::vector<AlarmEvent> AddFaults(const FaultSample& s);
  std::vector<AlarmEvent> AddGpuScan(const std::vector<GpuInfo>& gpus,
                                     const std::set<uint32_t>& own, double time_s);

  /// After serve --apply restarted the server with `settings`: they become
  /// the expected ones and the overflow detector starts over with `baseline`.
  void Rebase(std::shared_ptr<const Baseline> baseline, const ServerSettings& settings);

  std::vector<Alarm> ActiveAlarms() const;
  const Verdict& verdict() const { return verdict_; }
  const Baseline& baseline() const { return overflow_->baseline(); }
  const std::optional<ServerSettings>& running() const { return running_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  Alarm OverflowAlarm(double time_s) const;
  Alarm FaultAlarm(double time_s) const;
  Alarm GpuAlarm(double time_s) const;
  Alarm SettingsAlarm(const std::vector<SettingDifference>& diff, double time_s) const;
  void Record(std::vector<AlarmEvent>* events, bool raised, Alarm alarm);
  /// Raises the settings alarm on a difference, clears it when none is left.
  void UpdateSettingsAlarm(const std::vector<SettingDifference>& diff, double time_s,
                           bool restarted, std::vector<AlarmEvent>* events);

  SessionOptions options_;
  std::unique_ptr<OverflowDetector> overflow_;
  bool overflow_fed_ = false;
  PageFaultDetector faults_;
  GpuMemoryDetector gpu_;
  std::optional<ServerSettings> reference_;  // tuned, else first seen
  std::optional<ServerSettings> running_;
  std::optional<Alarm> settings_alarm_;
  std::optional<Alarm> overflow_alarm_, fault_alarm_, gpu_alarm_;
  Verdict verdict_;
  std::vector<std::string> notes_;
};

}  // namespace moetune
