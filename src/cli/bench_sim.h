#pragma once
/// `moetune bench --engine sim`: the same configurations and output formats as
/// the real bench, answered by the simulated engine on a (what-if) machine and
/// marked as simulated everywhere.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/machine_flags.h"
#include "engine/run_config.h"
#include "engine/sim_engine.h"
#include "util/result.h"

namespace moetune {

struct SimBenchOptions {
  std::string engine = "llama";  // llama | sim
  uint64_t seed = 1;
  MachineFlags machine;
};

/// Adds --engine, --seed and the what-if machine flags (`bench`, `tune`).
/// `with_vram`: --vram/--reserve too (a command that has its own passes false
/// and copies them into `options->machine` when they describe the machine).
void AddSimBenchFlags(CLI::App* cmd, SimBenchOptions* options, bool with_vram = true);

/// The what-if machine of `options` and the simulated engine's settings on it
/// (the machine's notes go to stderr).
Result<SimEngineOptions> ResolveSimEngine(const SimBenchOptions& options, ResolvedMachine* machine);

/// Runs `configs` on the simulated engine and writes the bench output (and
/// the `report` file when not empty, as the real engine's bench does).
/// `default_threads`: the user gave no -t, so use the machine's performance cores.
int RunSimBench(std::vector<RunConfig> configs, const SimBenchOptions& options, bool json,
                const std::string& output, bool default_threads, const std::string& report = "");

}  // namespace moetune
