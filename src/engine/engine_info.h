#pragma once
/// Finding a llama.cpp engine and asking it what it is: version/build, the
/// backends it loads, the devices it sees and the flags its llama-bench knows
/// (versions move fast: detect, never assume). Also the loud warning for the
/// silent CPU/Vulkan fallback on an NVIDIA machine.
///
/// Search order: --llama-dir, MOETUNE_LLAMA_DIR, the default engine installed
/// by scripts/setup-engine.sh (<repo>/.engine/bin), then PATH.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine_traps.h"
#include "util/result.h"
#include "util/units.h"

namespace moetune {

/// One device as listed by `llama-bench --list-devices`.
struct EngineDevice {
  std::string name;         // "CUDA0", "Vulkan0"
  std::string description;  // "NVIDIA GeForce RTX 4090"
  std::optional<Bytes> total;
  std::optional<Bytes> free;
};

/// What was found and what it can do.
struct EngineInfo {
  std::string dir;           // folder holding llama-bench, llama-server, ...
  std::string origin;        // "--llama-dir", "MOETUNE_LLAMA_DIR", "default engine", "PATH"
  std::string version_line;  // "version: 0.7.0 (build 11669, commit Debian)"
  std::string version;       // "0.7.0" (empty for builds that print only a build number)
  int64_t build_number = -1;
  std::string commit;
  std::string built_with;  // "GNU 16.2.0 for Linux x86_64"
  /// Backends the engine loaded ("CPU", "RPC", "CUDA", ...), from its log or,
  /// after a benchmark, from the `backends` field.
  std::vector<std::string> backends;
  std::vector<EngineDevice> devices;
  /// Every flag llama-bench's --help lists ("-ncmoe", "--progress", ...).
  std::set<std::string> bench_flags;
  std::vector<std::string> warnings;

  /// Path of one tool ("llama-bench") in `dir`.
  std::string ToolPath(std::string_view tool) const;
  bool HasTool(std::string_view tool) const;
  bool HasBenchFlag(std::string_view flag) const {
    return bench_flags.count(std::string(flag)) > 0;
  }
  bool HasBackend(std::string_view backend) const;
};

struct DiscoveryOptions {
  /// --llama-dir; empty = not given.
  std::string llama_dir;
  /// Run the engine to learn version, backends, devices and flags.
  bool probe = true;
  /// Root for /proc and /sys lookups (tests point it at a fixture tree).
  std::string system_root = "/";
};

/// Finds the engine and probes it. Errors (kNotFound) list every place looked
/// at and how to install or point at an engine.
Result<EngineInfo> DiscoverEngine(const DiscoveryOptions& options = {});

/// The folder of the default engine (<repo>/.engine/bin), whether or not it exists.
std::string DefaultEngineDir();

/// True when the machine has an NVIDIA GPU (driver in /proc, or a PCI display
/// device with vendor 0x10de in /sys).
bool NvidiaGpuPresent(const std::string& system_root = "/");

/// Warnings about the engine on this machine, e.g. an NVIDIA GPU with no CUDA
/// backend in the engine (a silent fallback that costs 20-40% or more).
std::vector<std::string> EngineWarnings(const EngineInfo& info, bool nvidia_gpu_present);

/// What doctor's engine checks need, from a discovery (the one engine
/// discovery every command uses) or from its error.
EngineProbe EngineProbeFromInfo(const EngineInfo& info);
EngineProbe EngineProbeFromError(const Error& error);

/// The key under which the static probes (--version, --help) of the
/// llama-bench at `path` are cached: its canonical path and the identity of
/// the file (size, modification and change times, inode). Empty when the file
/// cannot be examined (then nothing is cached).
std::string ProbeCacheKey(const std::string& path);

}  // namespace moetune
