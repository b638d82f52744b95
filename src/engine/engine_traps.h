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

/// What the engine (found and probed by the one engine discovery,
/// engine/engine_info.h, which the command layer runs) says about itself.
struct EngineProbe {
  std::string llama_bench;  // path used; "" when none was found
  bool ran = false;
  std::vector<std::string> devices;  // "CUDA0: NVIDIA ... (24080 MiB, 23000 MiB free)"
  /// A device of that backend is listed (it is what will run the model).
  bool has_cuda = false;
  bool has_vulkan = false;
  bool has_rocm = false;
  /// The engine has the CUDA backend (loaded or linked in), device or not.
  bool cuda_backend = false;
  std::vector<std::string> backends;  // "CPU", "CUDA", ...
  std::string backend_source;         // "linked in", "loaded at run time", ...
  std::string note;                   // why it did not run, or its error
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

/// All traps found, unordered.
std::vector<EngineTrap> FindEngineTraps(const EngineTrapInputs& in);

}  // namespace moetune
