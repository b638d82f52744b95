#pragma once
/// llama.cpp's own memory oracle: `llama-fit-params <flags> -fitp on` does a
/// dry run (no weights read, no buffers allocated) and prints, per device, the
/// model, context and compute sizes in MiB: `<device> <model> <context>
/// <compute>` (a `Host` line for host memory). `moetune plan --check` puts
/// moetune's own prediction beside it.
///
/// Caveat (docs/llama-cpp.md): on the CPU backend, repacked weights
/// (CPU_REPACK) are not in the Host line.

#include <string>
#include <string_view>
#include <vector>

#include "config/server_config.h"
#include "engine/engine_info.h"
#include "engine/failure.h"
#include "util/result.h"
#include "util/units.h"

namespace moetune {

/// Sizes of one device as the engine computed them (MiB precision).
struct FitParamsDevice {
  std::string name;  // "Host", "CUDA0", ...
  Bytes model_bytes;
  Bytes context_bytes;
  Bytes compute_bytes;
  Bytes total() const { return model_bytes + context_bytes + compute_bytes; }
};

struct FitParamsReport {
  std::vector<FitParamsDevice> devices;
  std::vector<std::string> argv;  // the command that produced it
  double wall_seconds = 0;
  /// The device named `name`, or nullptr.
  const FitParamsDevice* Find(std::string_view name) const;
};

/// Parses the `-fitp on` lines of stdout. Errors when no line parses.
Result<std::vector<FitParamsDevice>> ParseFitParamsOutput(std::string_view text);

struct FitParamsOptions {
  /// Load without mmap and without CPU repacking (`-lm none --no-repack`), so
  /// that host-resident weights are counted in the Host line. With the engine's
  /// defaults they are mapped or repacked and the Host "model" column reads 0.
  bool count_host_weights = false;
  /// `--rpc HOST:PORT[,...]`: RPC servers whose devices join the dry run.
  std::string rpc;
};

/// The argument vector RunFitParams uses: `config`'s own command line
/// (config/server_argv.h ServerArgv, the same as the command moetune prints)
/// with the tool in place of llama-server, `-fit off` (explicit placement),
/// the options' RPC servers and load options, then `-fitp on` (sizes printed
/// per device).
std::vector<std::string> FitParamsArgv(const EngineInfo& engine, const ServerConfig& config,
                                       const FitParamsOptions& options = {});

/// Runs llama-fit-params. Errors carry the engine's message (kEngine, with the
/// failure kind in the text), kUnsupported when this engine's llama-fit-params
/// rejects one of the flags (e.g. -kvu, which only llama-server takes), or
/// kNotFound for a missing tool.
Result<FitParamsReport> RunFitParams(const EngineInfo& engine, const ServerConfig& config,
                                     const FitParamsOptions& options = {});

}  // namespace moetune
