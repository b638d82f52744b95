#pragma once
/// A quiet machine, or a warning (tune, bench and calibrate, real engine):
/// before the first run the machine is sampled (1 s) for what else runs on it
/// (hw/machine_load.h), `--wait-quiet[=SECONDS]` waits for it to go quiet
/// (bounded), and after the runs the results taken while other processes were
/// busy are counted and said. Each result carries its own figure
/// (RunResult::other_cpu_cores), in the journal and the JSON.

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_config.h"

namespace moetune {

/// Registers --wait-quiet[=SECONDS] (120 s without a value; 0, the default,
/// does not wait).
void AddWaitQuietFlag(CLI::App* cmd, double* seconds);

/// Samples the machine before the first run (1 s), waiting up to
/// `wait_seconds` for it to go quiet; the warning to print and keep when it
/// is still busy, nullopt when quiet (or when /proc/stat cannot be read).
std::optional<std::string> CheckQuietMachine(double wait_seconds);

/// "3 of 12 measurements ran while other processes were busy (up to 1.40
/// cores; above 0.25 is busy): ..."; nullopt when none was.
std::optional<std::string> BusyResultsNote(const std::vector<RunResult>& results);

}  // namespace moetune
