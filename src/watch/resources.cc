#include "watch/resources.h"

#include <algorithm>

namespace moetune {

void PageFaultDetector::Add(const FaultSample& s) {
  raised_now_ = cleared_now_ = false;
  if (!s.busy) return;  // idle samples say nothing about load
  const double rate = s.interval_s > 0 ? static_cast<double>(s.major_faults) / s.interval_s : 0;
  const auto growth_limit = std::max(
      static_cast<int64_t>(static_cast<double>(s.rss_bytes) * rules_.max_rss_growth_fraction),
      rules_.max_rss_growth_bytes);
  const bool thrashing = s.major_faults >= rules_.min_faults &&
                         rate >= rules_.min_faults_per_second && s.rss_growth_bytes <= growth_limit;
  if (thrashing) {
    quiet_ = 0;
    run_.push_back(s);
    if (active_) {
      evidence_ = run_;
    } else if (static_cast<int>(run_.size()) >= rules_.to_raise) {
      active_ = raised_now_ = true;
      evidence_ = run_;
    }
    return;
  }
  // A warm-up sample (faults with growing RSS) is neither evidence nor calm.
  if (s.major_faults < rules_.quiet_faults) {
    run_.clear();
    if (active_ && ++quiet_ >= rules_.to_clear) {
      active_ = false;
      cleared_now_ = true;
      quiet_ = 0;
    }
  }
}

void GpuMemoryDetector::Add(const std::vector<GpuInfo>& gpus, const std::set<uint32_t>& own) {
  raised_now_ = cleared_now_ = false;
  auto own_bytes = [&](const GpuInfo& g) {
    int64_t b = 0;
    for (const auto& p : g.processes) {
      if (own.count(p.pid) && p.used_bytes) b += *p.used_bytes;
    }
    return b;
  };
  if (!has_reference_) {
    for (const auto& g : gpus) {
      auto& pids = start_pids_[g.index];
      for (const auto& p : g.processes) pids.insert(p.pid);
      start_free_[g.index] = g.free_bytes;
      start_own_[g.index] = own_bytes(g);
    }
    has_reference_ = true;
    return;
  }
  std::vector<GpuIntruder> found;
  for (const auto& g : gpus) {
    if (!start_free_.count(g.index)) continue;  // a GPU that appeared later
    const auto& before = start_pids_[g.index];
    if (g.processes_known) {
      for (const auto& p : g.processes) {
        if (own.count(p.pid) || before.count(p.pid)) continue;
        if (p.used_bytes && *p.used_bytes < rules_.min_process_bytes) continue;
        if (!p.used_bytes && start_free_[g.index] - g.free_bytes < rules_.min_process_bytes)
          continue;
        found.push_back({g.index, g.name, p.pid, p.name.empty() ? "?" : p.name,
                         p.used_bytes.value_or(start_free_[g.index] - g.free_bytes),
                         start_free_[g.index], g.free_bytes});
      }
    } else {
      const int64_t drop = start_free_[g.index] - g.free_bytes;
      const int64_t own_growth = own_bytes(g) - start_own_[g.index];
      if (drop - own_growth >= rules_.min_free_drop_bytes) {
        found.push_back({g.index, g.name, std::nullopt, "", drop - own_growth, start_free_[g.index],
                         g.free_bytes});
      }
    }
  }
  if (!found.empty()) {
    gone_ = 0;
    intruders_ = found;
    if (!active_ && ++seen_ >= rules_.to_raise) active_ = raised_now_ = true;
  } else {
    seen_ = 0;
    if (active_ && ++gone_ >= rules_.to_clear) {
      active_ = false;
      cleared_now_ = true;
      gone_ = 0;
    }
  }
}

}  // namespace moetune
