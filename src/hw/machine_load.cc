#include "hw/machine_load.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

namespace moetune {
namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double RusageSeconds(int who) {
  rusage u{};
  if (getrusage(who, &u) != 0) return 0;
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

}  // namespace

std::optional<CpuClock> ReadCpuClock(const SysRoot& root) {
  const auto line = root.ReadLine("/proc/stat");
  if (!line || line->rfind("cpu ", 0) != 0) return std::nullopt;
  std::istringstream in(line->substr(4));
  std::vector<double> ticks;
  double v = 0;
  while (ticks.size() < 8 && in >> v) {
    if (v < 0) return std::nullopt;
    ticks.push_back(v);
  }
  // user nice system idle iowait irq softirq steal (guest time is inside user).
  if (ticks.size() < 5) return std::nullopt;
  const long hz = sysconf(_SC_CLK_TCK);
  const double tick = 1.0 / static_cast<double>(hz > 0 ? hz : 100);
  CpuClock c;
  for (std::size_t i = 0; i < ticks.size(); ++i) {
    c.total_seconds += ticks[i] * tick;
    if (i != 3 && i != 4) c.busy_seconds += ticks[i] * tick;
  }
  return c;
}

double OwnCpuSeconds() { return RusageSeconds(RUSAGE_SELF) + RusageSeconds(RUSAGE_CHILDREN); }

LoadMeter::LoadMeter(SysRoot root) : root_(std::move(root)) {}

void LoadMeter::Start() {
  start_clock_ = ReadCpuClock(root_);
  start_own_ = OwnCpuSeconds();
  start_wall_ = NowSeconds();
}

std::optional<MachineLoad> LoadMeter::Stop() const {
  const auto end = ReadCpuClock(root_);
  if (!start_clock_ || !end) return std::nullopt;
  MachineLoad l;
  l.seconds = NowSeconds() - start_wall_;
  if (l.seconds <= 0) return std::nullopt;
  const double busy = end->busy_seconds - start_clock_->busy_seconds;
  const double own = OwnCpuSeconds() - start_own_;
  // The clock ticks at 100 Hz and the two readings are not atomic: a small
  // negative difference is rounding, not a negative load.
  l.other_cores = std::max(0.0, (busy - own) / l.seconds);
  return l;
}

std::optional<MachineLoad> SampleLoad(double seconds, const SysRoot& root) {
  LoadMeter m(root);
  m.Start();
  std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, seconds)));
  return m.Stop();
}

QuietWait WaitForQuiet(double max_seconds, double window, const SysRoot& root) {
  QuietWait w;
  const double start = NowSeconds();
  do {
    w.last = SampleLoad(window, root);
    w.waited_seconds = NowSeconds() - start;
    if (!w.last) return w;  // nothing to go by: do not wait blind
    w.quiet = !IsBusy(*w.last);
  } while (!w.quiet && w.waited_seconds + window <= max_seconds);
  return w;
}

std::string MachineLoadText(const MachineLoad& load) {
  return fmt::format("other processes used {:.2f} core(s) on average over {:.1f} s",
                     load.other_cores, load.seconds);
}

}  // namespace moetune
