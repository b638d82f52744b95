#pragma once
/// The llama-server command that `moetune serve` runs: the tuned or planned
/// configuration (from `--from FILE`'s command, read back into a ServerConfig,
/// or the plan made on the spot) with the engine's own llama-server, the model
/// given on the command line, the address to listen on, and `--metrics`
/// (watch needs it); `/slots` stays on (its default). Only what a ServerConfig
/// holds is started: a file's other flags (paths, logging, keys) never reach
/// llama-server.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/server_config.h"
#include "plan/gpu_budget.h"
#include "plan/placement.h"
#include "util/result.h"

namespace moetune {

struct ServeCommandOptions {
  std::string server_path;  // the engine's llama-server
  std::string model;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::optional<int> threads;  // -t, replacing the command's
};

/// The command for `base` (its model, address and -t replaced by `options`').
std::vector<std::string> ServeArgv(const ServerConfig& base, const ServeCommandOptions& options);

/// The configuration of a command read from a `--from` file, and what of it is
/// not started: `dropped` lists, as given, the flags a ServerConfig does not
/// hold and the arguments moetune does not know.
ServerConfig ConfigFromCommand(const std::vector<std::string>& argv,
                               std::vector<std::string>* dropped);

/// What `moetune serve` plans with when no --from file gives the command
/// (the same meaning as `moetune plan`'s options).
struct ServePlanOptions {
  int64_t n_ctx = 4096;
  /// The GPU memory model (plan/gpu_budget.h): total 0 is no GPU, planned
  /// host-only.
  GpuMemoryBudget gpu;
  int64_t margin = 1024ll << 20;
  std::string type_k = "f16", type_v = "f16";
  int n_ubatch = 512, n_batch = 2048, n_parallel = 1;
  bool flash_attn = true;
  /// Devices named one by one (--vram A,B or --rpc): planned across them (or
  /// on the one), instead of `gpu`; their budgets were printed already.
  std::vector<DeviceBudget> devices;
  /// The RPC servers of those devices (--rpc), joined by the command.
  std::vector<std::string> rpc;
};

/// Plans the model like `moetune plan` and returns its configuration (that of
/// plan's `command_argv`); with no GPU, every layer on the host (-ngl 0).
/// Errors name the problem (no VRAM figure on a machine that may have a GPU,
/// bad cache type, nothing fits).
Result<ServerConfig> PlannedServerConfig(const std::string& model, const ServePlanOptions& options,
                                         std::vector<std::string>* notes);

}  // namespace moetune
