#include "watch/monitor.h"

#include "util/subprocess.h"

namespace moetune {

Monitor::Monitor(std::unique_ptr<LiveSampler> sampler, SessionOptions options)
    : sampler_(std::move(sampler)), session_(std::move(options)) {}

std::set<uint32_t> Monitor::OwnPids() const {
  std::set<uint32_t> own;
  if (auto pid = sampler_->pid()) {
    own.insert(static_cast<uint32_t>(*pid));
    for (pid_t d : LiveDescendantsOf(*pid)) own.insert(static_cast<uint32_t>(d));
  }
  return own;
}

std::vector<AlarmEvent> Monitor::CheckSettings(double time_s, bool restarted) {
  if (auto s = sampler_->settings()) return session_.SetServerSettings(*s, time_s, restarted);
  return session_.SetServerProps(sampler_->props(), time_s, restarted);
}

std::vector<AlarmEvent> Monitor::Start() {
  auto events = CheckSettings(0, false);
  if (!sampler_->first_gpus().empty()) {
    auto more = session_.AddGpuScan(sampler_->first_gpus(), OwnPids(), 0);
    events.insert(events.end(), more.begin(), more.end());
  }
  return events;
}

void Monitor::Reconnect(std::unique_ptr<LiveSampler> sampler) { sampler_ = std::move(sampler); }

Result<MonitorStep> Monitor::Step() {
  MonitorStep step;
  MOETUNE_ASSIGN_OR_RETURN(step.sample, sampler_->Next());
  const LiveSample& s = step.sample;
  auto add = [&](std::vector<AlarmEvent> more) {
    step.events.insert(step.events.end(), more.begin(), more.end());
  };
  if (s.restarted) add(CheckSettings(s.time_s, true));
  add(session_.AddObservation(s.observation, &step.check));
  if (s.now.process) {
    FaultSample f;
    f.time_s = s.time_s;
    f.interval_s = s.interval_s;
    f.busy = s.busy;
    f.major_faults = s.major_faults;
    f.rss_bytes = s.now.process->rss_bytes;
    f.rss_growth_bytes = s.rss_growth_bytes;
    f.mem_available_bytes = s.mem_available_bytes;
    add(session_.AddFaults(f));
  }
  if (s.gpu_scanned) add(session_.AddGpuScan(s.gpus, OwnPids(), s.time_s));
  step.active = session_.ActiveAlarms();
  step.baseline = session_.baseline().Describe();
  std::optional<double> depth;
  if (s.observation.prefill && s.observation.prefill->depth) {
    depth = s.observation.prefill->depth;
  } else if (s.observation.decode && s.observation.decode->depth) {
    depth = s.observation.decode->depth;
  } else if (s.max_depth) {
    depth = static_cast<double>(*s.max_depth);
  }
  if (depth) {
    step.expected = session_.baseline().At(*depth);
    step.expected_at_depth = depth;
  }
  return step;
}

}  // namespace moetune
