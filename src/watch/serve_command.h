#pragma once
/// The llama-server command that `moetune serve` runs: the tuned or planned
/// command (from `--from FILE`'s `command_argv`, or the plan made on the spot)
/// with the engine's own llama-server, the model given on the command line,
/// the address to listen on, and `--metrics` (watch needs it) and `/slots`
/// (on by default; `--no-slots` is removed).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace moetune {

struct ServeCommandOptions {
  std::string server_path;  // the engine's llama-server
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::optional<int> threads;  // -t, replacing the command's
};

/// `base` is a llama-server command as plan/tune print it
/// ("llama-server -m M -ngl 99 --n-cpu-moe N ..."); argv[0] is replaced.
std::vector<std::string> ServeArgv(const std::vector<std::string>& base,
                                   const ServeCommandOptions& options);

/// What `moetune serve` plans with when no --from file gives the command
/// (the same meaning as `moetune plan`'s options).
struct ServePlanOptions {
  int64_t n_ctx = 4096;
  std::optional<int64_t> vram_free;  // nullopt: the doctor's machine profile
  std::string profile;               // its path ("" = the default)
  int64_t reserve = 0;
  int64_t margin = 1024ll << 20;
  std::string type_k = "f16", type_v = "f16";
  int n_ubatch = 512, n_batch = 2048, n_parallel = 1;
  bool flash_attn = true;
};

/// Plans the model like `moetune plan` and returns its llama-server command
/// (plan's `command_argv`). Errors name the problem (no VRAM figure, bad
/// cache type, nothing fits).
Result<std::vector<std::string>> PlannedServerCommand(const std::string& model,
                                                      const ServePlanOptions& options,
                                                      std::vector<std::string>* notes);

/// The value of the first of `names` in `argv` (after argv[0]), if any.
std::optional<std::string> FlagValue(const std::vector<std::string>& argv,
                                     const std::vector<std::string>& names);

}  // namespace moetune
