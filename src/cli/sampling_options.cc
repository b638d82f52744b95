#include "cli/sampling_options.h"

#include "cli/validators.h"

namespace moetune {

void AddSamplingOptions(CLI::App* cmd, SamplingOptions* o) {
  cmd->add_option("--interval", o->interval, "Seconds between samples")
      ->check(Seconds(0.2, 3600))
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds to wait for each answer of the server")
      ->check(Seconds(0.1, 600))
      ->capture_default_str();
  cmd->add_option("--duration", o->duration, "Stop after this many seconds (default: Ctrl-C)")
      ->check(Seconds(1, 31536000));
}

}  // namespace moetune
