#pragma once
/// A live watch: a LiveSampler feeding a WatchSession, one step per sampling
/// interval. `moetune watch URL` and `moetune serve` both drive one; the
/// command layer decides when to step and how to print.

#include <memory>
#include <set>
#include <vector>

#include "util/result.h"
#include "watch/sampler.h"
#include "watch/session.h"

namespace moetune {

struct MonitorStep {
  LiveSample sample;
  OverflowCheck check;
  std::vector<AlarmEvent> events;  // raised or cleared in this step
  std::vector<Alarm> active;       // after this step
  ExpectedSpeed expected;          // at the prefill (else decode, else deepest slot) depth
  std::optional<double> expected_at_depth;
  std::string baseline;  // where the expectation comes from, now
};

class Monitor {
 public:
  Monitor(std::unique_ptr<LiveSampler> sampler, SessionOptions options);

  /// The checks that need no interval: the server's settings against the
  /// tuned ones, the first GPU scan as reference.
  std::vector<AlarmEvent> Start();
  /// One sample and its judgement.
  Result<MonitorStep> Step();

  LiveSampler& sampler() { return *sampler_; }
  WatchSession& session() { return session_; }
  /// Replaces the sampler (serve, after restarting the server).
  void Reconnect(std::unique_ptr<LiveSampler> sampler);

 private:
  std::vector<AlarmEvent> CheckSettings(double time_s, bool restarted);
  std::set<uint32_t> OwnPids() const;

  std::unique_ptr<LiveSampler> sampler_;
  WatchSession session_;
};

}  // namespace moetune
