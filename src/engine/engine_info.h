#pragma once
/// Finding a llama.cpp engine and asking it what it is: version/build, the
/// backends it loads, the devices it sees and the flags its llama-bench knows
/// (versions move fast: detect, never assume). Also the loud warning for the
/// silent CPU/Vulkan fallback on an NVIDIA machine.
///
/// Search order: --llama-dir, MOETUNE_LLAMA_DIR, the default engine installed
/// by scripts/setup-engine.sh (<repo>/.engine/bin), then PATH.

#include <cstdint>
#include <initializer_list>
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

/// The tools of an engine whose flags moetune knows.
enum class EngineTool { kBench, kServer, kFitParams };

/// "llama-bench", "llama-server", "llama-fit-params".
std::string_view EngineToolName(EngineTool tool);

/// How the engine's backends were learned (a build either loads its backends
/// at run time or has them linked in; engine/linked_backends.h).
enum class BackendSource {
  kUnknown,  // neither: a wrapper script around a static, stripped build
  kLoaded,   // "load_backend: loaded CUDA backend from ..." at start (GGML_BACKEND_DL)
  kLinked,   // libggml-cuda.so in the tools' link closure, or the static symbols
  kDevices,  // only from the device names --list-devices printed
};

/// "loaded at run time", "linked in", "seen as devices", "unknown".
std::string_view BackendSourceName(BackendSource source);

/// What was found and what it can do.
struct EngineInfo {
  std::string dir;           // folder holding llama-bench, llama-server, ...
  std::string origin;        // "--llama-dir", "MOETUNE_LLAMA_DIR", "default engine", "PATH"
  std::string version_line;  // "version: 0.7.0 (build 11669, commit Debian)"
  std::string version;       // "0.7.0" (empty for builds that print only a build number)
  int64_t build_number = -1;
  std::string commit;
  std::string built_with;  // "GNU 16.2.0 for Linux x86_64"
  /// The tool whose `--version` printed version_line: "llama-bench", or
  /// another tool for builds whose llama-bench has no --version (0.4.0).
  /// Empty when none did.
  std::string version_tool;
  /// Backends the engine has ("CPU", "RPC", "CUDA", ...): loaded at start,
  /// linked in, or seen as devices; after a benchmark, its `backends` field.
  std::vector<std::string> backends;
  BackendSource backend_source = BackendSource::kUnknown;
  /// The files that showed linked-in backends ("libggml-cuda.so", ...).
  std::vector<std::string> backend_evidence;
  std::vector<EngineDevice> devices;
  /// Every flag llama-bench's --help lists ("-ncmoe", "--progress", ...).
  std::set<std::string> bench_flags;
  /// The same for llama-server and llama-fit-params (empty: the tool is
  /// missing or its --help printed no flag). Versions add, rename and remove
  /// flags: the command builders consult these through Supports().
  std::set<std::string> server_flags;
  std::set<std::string> fit_params_flags;
  std::vector<std::string> warnings;

  /// Path of one tool ("llama-bench") in `dir`.
  std::string ToolPath(std::string_view tool) const;
  bool HasTool(std::string_view tool) const;
  bool HasBenchFlag(std::string_view flag) const {
    return bench_flags.count(std::string(flag)) > 0;
  }
  bool HasBackend(std::string_view backend) const;
  /// Whether `tool` takes `flag`: nullopt when its flags are unknown (the
  /// tool printed none; then moetune passes the flag and lets the engine say).
  std::optional<bool> Supports(EngineTool tool, std::string_view flag) const;
  /// The first of `spellings` that `tool` takes ("-fitp", "--fit-print"),
  /// the first one when the flags are unknown, nullopt when it takes none.
  std::optional<std::string> Spelling(EngineTool tool,
                                      std::initializer_list<std::string_view> spellings) const;
  /// "0.7.0 (build 11669)", "build 6540", or "of unknown version": how error
  /// messages name this engine.
  std::string Describe() const;
};

/// The flags of `argv` (a command for `tool`; argv[0] is the tool) that this
/// engine's `tool` does not take: an error (kUnsupported) naming the engine's
/// version, the tool and each missing flag, with the fix; OK when every flag
/// is known or the tool's flags are unknown. `purpose` says what the command
/// is for ("the memory dry run of plan --check").
Status CheckEngineFlags(const EngineInfo& info, EngineTool tool,
                        const std::vector<std::string>& argv, std::string_view purpose);

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

}  // namespace moetune
