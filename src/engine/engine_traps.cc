#include "engine/engine_traps.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <sstream>

extern char** environ;

namespace moetune {

std::map<std::string, std::string> CurrentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

namespace {

std::string Get(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

// Non-comment "key = value" lines of an ini file.
std::vector<std::string> IniSettings(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::string t(Trim(line));
    if (t.empty() || t[0] == '#' || t[0] == ';' || t[0] == '[') continue;
    out.push_back(t);
  }
  return out;
}

// The engine missing, or without a CUDA device on an NVIDIA machine.
void AddEngineTraps(const EngineTrapInputs& in, std::vector<EngineTrap>* traps) {
  if (in.engine && !in.engine->ran) {
    traps->push_back(
        {"engine_unavailable", 90, "no usable llama.cpp engine",
         in.engine->note.empty() ? "the engine could not be found or started" : in.engine->note,
         "install the default engine with scripts/setup-engine.sh, or point "
         "--llama-dir / MOETUNE_LLAMA_DIR at a folder with llama-bench"});
  }
  if (in.nvidia_gpus > 0 && in.engine && in.engine->ran && !in.engine->has_cuda) {
    const EngineProbe& e = *in.engine;
    const std::string fallback = e.has_vulkan ? "Vulkan" : "the CPU";
    const std::string listed = e.devices.empty()
                                   ? "no devices at all"
                                   : fmt::format("only: {}", fmt::join(e.devices, "; "));
    if (e.cuda_backend) {
      // The build has CUDA (a linked-in backend logs nothing), yet no device
      // registered: the driver or the runtime is the problem, not the build.
      traps->push_back(
          {"cuda_backend_no_device", 100, "llama.cpp's CUDA backend sees no GPU",
           fmt::format("the engine has the CUDA backend ({}) but `{} --list-devices` lists no "
                       "CUDA device ({}); llama.cpp will run on {} instead",
                       e.backend_source.empty() ? "found" : e.backend_source, e.llama_bench, listed,
                       fallback),
           "check `nvidia-smi`, that the driver is at least as new as the CUDA runtime the "
           "engine was built with, and that CUDA_VISIBLE_DEVICES does not hide the GPU"});
    } else {
      traps->push_back(
          {"no_cuda_backend", 100, "llama.cpp has no CUDA backend on an NVIDIA machine",
           fmt::format(
               "`{} --list-devices` lists no CUDA device ({}) and the engine has no "
               "CUDA backend (backends: {}); llama.cpp will run on {} instead",
               e.llama_bench, listed,
               e.backends.empty() ? "unknown" : fmt::format("{}", fmt::join(e.backends, ", ")),
               fallback),
           "install a CUDA build of llama.cpp (or the libggml CUDA backend) and point "
           "MOETUNE_LLAMA_DIR at it"});
    }
  }
}

// What changes llama.cpp's flags behind the command line: LLAMA_ARG_*
// variables and its config files (system-wide, then the user's).
void AddConfigTraps(const EngineTrapInputs& in, std::vector<EngineTrap>* traps) {
  const auto& env = in.env;
  std::vector<std::string> llama_args;
  for (const auto& [k, v] : env) {
    if (k.rfind("LLAMA_ARG_", 0) == 0) llama_args.push_back(fmt::format("{}={}", k, v));
  }
  if (!llama_args.empty()) {
    traps->push_back(
        {"llama_arg_env", 70,
         fmt::format("{} LLAMA_ARG_* variable(s) change llama.cpp's flags", llama_args.size()),
         fmt::format("llama.cpp reads these as if they were flags: {}",
                     fmt::join(llama_args, ", ")),
         "unset them (flags given on the command line still override them)"});
  }
  std::vector<std::string> configs = {"/etc/llama.cpp/config.ini"};
  std::string user_config;
  if (!Get(env, "XDG_CONFIG_HOME").empty())
    user_config = Get(env, "XDG_CONFIG_HOME") + "/llama.cpp/config.ini";
  else if (!Get(env, "HOME").empty())
    user_config = Get(env, "HOME") + "/.config/llama.cpp/config.ini";
  for (const auto& path : configs) {
    if (auto text = in.root.Read(path)) {
      const auto settings = IniSettings(*text);
      traps->push_back(
          {"config_ini", 65, fmt::format("llama.cpp config file {}", path),
           fmt::format("applied before the command line; {} setting(s): {}", settings.size(),
                       fmt::join(settings, "; ")),
           fmt::format("move {} aside while tuning, or keep moetune's flags explicit", path)});
    }
  }
  if (!user_config.empty()) {
    // The user's file is read as is (HOME is already a real path, not under root).
    std::error_code ec;
    if (std::filesystem::exists(user_config, ec)) {
      const SysRoot live("/");
      const auto settings = IniSettings(live.Read(user_config).value_or(""));
      traps->push_back({"config_ini_user", 65, fmt::format("llama.cpp config file {}", user_config),
                        fmt::format("applied before the command line; {} setting(s): {}",
                                    settings.size(), fmt::join(settings, "; ")),
                        fmt::format("move {} aside while tuning, or keep moetune's flags explicit",
                                    user_config)});
    }
  }
}

}  // namespace

std::vector<EngineTrap> FindEngineTraps(const EngineTrapInputs& in) {
  std::vector<EngineTrap> traps;
  const auto& env = in.env;
  if (env.count("GGML_CUDA_ENABLE_UNIFIED_MEMORY")) {
    traps.push_back(
        {"unified_memory", 95, "GGML_CUDA_ENABLE_UNIFIED_MEMORY is set",
         fmt::format("GGML_CUDA_ENABLE_UNIFIED_MEMORY={}: CUDA buffers become managed "
                     "memory that silently spills to system RAM, and free VRAM is "
                     "reported as MemAvailable, so --fit and moetune's plan are fooled; "
                     "prefill collapses several times while decode drops ~20%",
                     Get(env, "GGML_CUDA_ENABLE_UNIFIED_MEMORY")),
         "unset GGML_CUDA_ENABLE_UNIFIED_MEMORY (any value enables it)"});
  }
  AddEngineTraps(in, &traps);
  for (const char* var : {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                          "GGML_VK_VISIBLE_DEVICES"}) {
    if (env.count(var)) {
      traps.push_back({std::string("visible_devices_") + var, 60, fmt::format("{} is set", var),
                       fmt::format("{}='{}' hides GPUs from llama.cpp (doctor still lists every "
                                   "GPU the driver sees)",
                                   var, Get(env, var)),
                       fmt::format("unset {} unless you meant to hide devices", var)});
    }
  }
  if (env.count("GGML_CUDA_NO_PINNED")) {
    traps.push_back({"no_pinned", 40, "GGML_CUDA_NO_PINNED is set",
                     "host buffers are not pinned, so prefill with CPU-side experts copies them "
                     "to the GPU more slowly",
                     "unset GGML_CUDA_NO_PINNED"});
  }
  if (env.count("GGML_OP_OFFLOAD_MIN_BATCH")) {
    traps.push_back({"op_offload_min_batch", 30, "GGML_OP_OFFLOAD_MIN_BATCH is set",
                     fmt::format("GGML_OP_OFFLOAD_MIN_BATCH={} changes from which batch size "
                                 "host-resident experts are copied to the GPU (default 32): "
                                 "prefill speed differs from a default run",
                                 Get(env, "GGML_OP_OFFLOAD_MIN_BATCH")),
                     "unset it unless you are tuning it on purpose"});
  }
  if (env.count("GGML_BACKEND_PATH")) {
    traps.push_back(
        {"backend_path", 20, "GGML_BACKEND_PATH is set",
         fmt::format("llama.cpp loads an extra backend from '{}'", Get(env, "GGML_BACKEND_PATH")),
         "make sure it is the backend you expect"});
  }
  AddConfigTraps(in, &traps);
  return traps;
}

}  // namespace moetune
