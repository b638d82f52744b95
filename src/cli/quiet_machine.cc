#include "cli/quiet_machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "hw/machine_load.h"
#include "util/utf8.h"

namespace moetune {

void AddWaitQuietFlag(CLI::App* cmd, double* seconds) {
  cmd->add_flag("--wait-quiet{120}", *seconds,
                "Before measuring, wait up to SECONDS (default 120: --wait-quiet=SECONDS) for "
                "other processes to leave the CPU alone")
      ->check(CLI::Range(0.0, 86400.0));
}

std::optional<std::string> CheckQuietMachine(double wait_seconds) {
  constexpr double kWindow = 1.0;  // long enough for the 100 Hz clock, short before every run
  if (wait_seconds > 0) {
    std::cerr << ForTerminal(
        fmt::format("moetune: waiting up to {:.0f} s for a quiet machine\n", wait_seconds));
  }
  const QuietWait w = WaitForQuiet(std::max(wait_seconds, kWindow), kWindow);
  if (!w.last || w.quiet) return std::nullopt;
  return fmt::format(
      "the machine is busy: {}{}; measurements taken now are slower and noisier than on a "
      "quiet machine (close what runs, or pass --wait-quiet[=SECONDS] to wait for it); results "
      "taken while busy are marked",
      MachineLoadText(*w.last),
      wait_seconds > 0 ? fmt::format(", still after waiting {:.0f} s", w.waited_seconds) : "");
}

std::optional<std::string> BusyResultsNote(const std::vector<RunResult>& results) {
  std::size_t busy = 0, measured = 0;
  double worst = 0;
  for (const auto& r : results) {
    if (!r.other_cpu_cores) continue;
    ++measured;
    if (IsBusy(MachineLoad{0, *r.other_cpu_cores})) {
      ++busy;
      worst = std::max(worst, *r.other_cpu_cores);
    }
  }
  if (busy == 0) return std::nullopt;
  return fmt::format(
      "{} of {} measurement(s) ran while other processes were busy (up to {:.2f} cores; above "
      "{:.2f} is busy): their speeds are lower and noisier than this machine's; measure again on "
      "a quiet machine (--wait-quiet)",
      busy, measured, worst, kBusyOtherCores);
}

}  // namespace moetune
