#pragma once
/// Settings outside moetune's command line that silently change what llama.cpp
/// does: environment variables, llama.cpp's config.ini files, and an engine
/// build without the backend the GPU needs (a silent fallback to CPU/Vulkan).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hw/sysfs.h"

namespace moetune {

/// One finding, ordered later by impact (verdicts.h).
struct EngineTrap {
  std::string id;  // stable key, e.g. "unified_memory"
  int impact = 0;  // 0..100, higher first
  std::string title;
  std::string detail;
  std::string fix;
};

/// What `llama-bench --list-devices` said about the installed engine.
struct EngineProbe {
  std::string llama_bench;  // path used; "" when none was found
  bool ran = false;
  std::vector<std::string> devices;  // "CUDA0: NVIDIA ... (24080 MiB, 23000 MiB free)"
  bool has_cuda = false;
  bool has_vulkan = false;
  bool has_rocm = false;
  std::string note;  // why it did not run, or its error
};

struct EngineTrapInputs {
  std::map<std::string, std::string> env;
  SysRoot root{"/"};  // /etc/llama.cpp/config.ini is read under it
  int nvidia_gpus = 0;
  int amd_gpus = 0;
  std::optional<EngineProbe> engine;
};

/// The environment of this process as a map.
std::map<std::string, std::string> CurrentEnvironment();

/// llama-bench to probe: $MOETUNE_LLAMA_DIR/llama-bench, <source>/.engine/bin/llama-bench,
/// then PATH. "" when none exists.
std::string FindLlamaBench(const std::map<std::string, std::string>& env);

/// Runs `llama-bench --list-devices` (5 s timeout) and reads its device list.
EngineProbe ProbeEngine(const std::string& llama_bench);

/// Parses the output of `--list-devices` into `probe`.
void ParseListDevices(const std::string& text, EngineProbe* probe);

/// All traps found, unordered.
std::vector<EngineTrap> FindEngineTraps(const EngineTrapInputs& in);

}  // namespace moetune
