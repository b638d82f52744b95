#pragma once
/// The sampling options that `watch` and `serve` share: --interval, --timeout,
/// --duration, with the same ranges and help in both commands.

#include <CLI/CLI.hpp>

namespace moetune {

struct SamplingOptions {
  double interval = 5;  // seconds between samples
  double timeout = 10;  // seconds to wait for each answer of the server
  double duration = 0;  // 0 = until Ctrl-C
};

/// Registers --interval, --timeout and --duration on `cmd`, bound to `o`.
void AddSamplingOptions(CLI::App* cmd, SamplingOptions* o);

}  // namespace moetune
