#include "engine/engine_info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>

#include "config/flags.h"
#include "engine/engine_output.h"
#include "engine/engine_probes.h"
#include "engine/linked_backends.h"
#include "hw/platform.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace moetune {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kBench = "llama-bench";

bool IsExecutable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// A user's llama.cpp checkout has its tools in build/bin; accept the checkout,
// the build folder or the bin folder.
std::optional<std::string> ToolDirIn(const fs::path& dir) {
  for (const fs::path& d : {dir, dir / "bin", dir / "build" / "bin"}) {
    if (IsExecutable(d / kBench)) return fs::weakly_canonical(d).string();
  }
  return std::nullopt;
}

// Backends from every source, strongest evidence first: the load_backend
// lines of a dynamically loading build, the files of a linked build, then the
// device names (a build whose files say nothing, e.g. behind a wrapper).
void FindBackends(const std::string& bench_version_text, EngineInfo* info) {
  info->backends = ParseLoadedBackends(bench_version_text);
  if (!info->backends.empty()) {
    info->backend_source = BackendSource::kLoaded;
    return;
  }
  LinkedBackends linked = FindLinkedBackends(info->ToolPath(kBench));
  if (!linked.backends.empty()) {
    info->backends = std::move(linked.backends);
    info->backend_evidence = std::move(linked.evidence);
    info->backend_source = BackendSource::kLinked;
    return;
  }
  for (const auto& d : info->devices) {
    const std::string b = BackendOfDevice(d.name);
    if (!b.empty() && !info->HasBackend(b)) info->backends.push_back(b);
  }
  if (!info->backends.empty()) info->backend_source = BackendSource::kDevices;
}

// Version, backends, devices and flags from the engine's own answers.
Status ProbeEngine(EngineInfo* info) {
  const std::string bench = info->ToolPath(kBench);
  // --list-devices (free memory changes) always runs, concurrently with the
  // static probes (cached per build: engine_probes.h).
  auto devices_f =
      std::async(std::launch::async, [&] { return ProbeTool(bench, {"--list-devices"}); });
  auto probes = RunStaticProbes(info->dir);
  auto devices = devices_f.get();
  if (!probes.ok()) return probes.take_error();
  if (!devices.ok()) return devices.take_error();
  ParseVersionOutput(probes->version, info);
  info->version_tool = probes->version_tool;
  info->devices = ParseListDevices(*devices);
  info->bench_flags = ParseHelpFlags(probes->bench_help);
  info->server_flags = ParseHelpFlags(probes->server_help);
  info->fit_params_flags = ParseHelpFlags(probes->fit_params_help);
  FindBackends(probes->bench_version, info);
  if (info->version_line.empty()) {
    info->warnings.push_back(fmt::format(
        "no tool of the engine printed a version line (llama-bench, llama-server, llama-cli and "
        "llama-fit-params --version); the engine may be very old or broken: run `{} --version` "
        "to see why",
        bench));
  }
  return OkStatus();
}

const std::set<std::string>& FlagsOf(const EngineInfo& info, EngineTool tool) {
  switch (tool) {
    case EngineTool::kBench:
      return info.bench_flags;
    case EngineTool::kServer:
      return info.server_flags;
    case EngineTool::kFitParams:
      return info.fit_params_flags;
  }
  return info.bench_flags;
}

// A word of a command line that is a flag: "-ngl", "--n-cpu-moe", not "-1".
bool IsFlagWord(std::string_view w) {
  if (w.size() < 2 || w[0] != '-') return false;
  const char c = w[1] == '-' && w.size() > 2 ? w[2] : w[1];
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

}  // namespace

std::string EngineInfo::ToolPath(std::string_view tool) const {
  return (fs::path(dir) / tool).string();
}

bool EngineInfo::HasTool(std::string_view tool) const { return IsExecutable(fs::path(dir) / tool); }

bool EngineInfo::HasBackend(std::string_view backend) const {
  for (const auto& b : backends) {
    if (b == backend) return true;
  }
  return false;
}

std::optional<bool> EngineInfo::Supports(EngineTool tool, std::string_view flag) const {
  const auto& flags = FlagsOf(*this, tool);
  if (flags.empty()) return std::nullopt;
  return flags.count(std::string(flag)) > 0;
}

std::optional<std::string> EngineInfo::Spelling(
    EngineTool tool, std::initializer_list<std::string_view> spellings) const {
  for (const std::string_view s : spellings) {
    if (Supports(tool, s).value_or(true)) return std::string(s);
  }
  return std::nullopt;
}

std::string EngineInfo::Describe() const {
  if (!version.empty() && build_number >= 0) {
    return fmt::format("{} (build {})", version, build_number);
  }
  if (!version.empty()) return version;
  if (build_number >= 0) return fmt::format("build {}", build_number);
  return "of unknown version";
}

std::string_view EngineToolName(EngineTool tool) {
  switch (tool) {
    case EngineTool::kBench:
      return "llama-bench";
    case EngineTool::kServer:
      return "llama-server";
    case EngineTool::kFitParams:
      return "llama-fit-params";
  }
  return "llama-bench";
}

std::string_view BackendSourceName(BackendSource source) {
  switch (source) {
    case BackendSource::kUnknown:
      return "unknown";
    case BackendSource::kLoaded:
      return "loaded at run time";
    case BackendSource::kLinked:
      return "linked in";
    case BackendSource::kDevices:
      return "seen as devices";
  }
  return "unknown";
}

Status CheckEngineFlags(const EngineInfo& info, EngineTool tool,
                        const std::vector<std::string>& argv, std::string_view purpose) {
  std::vector<std::string> missing;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    if (!IsFlagWord(argv[i]) || info.Supports(tool, argv[i]).value_or(true)) continue;
    if (std::find(missing.begin(), missing.end(), argv[i]) == missing.end()) {
      missing.push_back(argv[i]);
    }
  }
  if (missing.empty()) return OkStatus();
  return Error(ErrorKind::kUnsupported,
               fmt::format("this engine's {} (llama.cpp {}, in {}) does not take {} (its --help "
                           "lists no such flag), which {} needs; use a llama.cpp that has it "
                           "(--llama-dir DIR or MOETUNE_LLAMA_DIR)",
                           EngineToolName(tool), info.Describe(), info.dir,
                           fmt::join(missing, ", "), purpose));
}

std::string DefaultEngineDir() {
  // Next to the build folder of this executable (build/moetune -> .engine/bin),
  // else in the source tree this binary was built from.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path d = exe.parent_path(); !d.empty() && d != d.root_path(); d = d.parent_path()) {
      if (IsExecutable(d / ".engine" / "bin" / kBench)) return (d / ".engine" / "bin").string();
    }
  }
  return (fs::path(MOETUNE_SOURCE_DIR) / ".engine" / "bin").string();
}

bool NvidiaGpuPresent(const std::string& system_root) {
  std::error_code ec;
  const fs::path root(system_root);
  const fs::path gpus = root / "proc/driver/nvidia/gpus";
  if (fs::is_directory(gpus, ec) && !fs::is_empty(gpus, ec)) return true;
  const fs::path pci = root / "sys/bus/pci/devices";
  if (!fs::is_directory(pci, ec)) return false;
  for (const auto& dev : fs::directory_iterator(pci, ec)) {
    std::string vendor, cls;
    std::ifstream(dev.path() / "vendor") >> vendor;
    std::ifstream(dev.path() / "class") >> cls;
    // Class 0x03xxxx: display controllers (VGA and 3D controllers alike).
    if (vendor == "0x10de" && cls.rfind("0x03", 0) == 0) return true;
  }
  return false;
}

std::vector<std::string> EngineWarnings(const EngineInfo& info, bool nvidia_gpu_present) {
  std::vector<std::string> w;
  bool cuda_device = false;
  for (const auto& d : info.devices) cuda_device = cuda_device || BackendOfDevice(d.name) == "CUDA";
  std::vector<std::string> devs;
  for (const auto& d : info.devices) devs.push_back(d.name);
  const std::string fallback = info.HasBackend("Vulkan") ? "Vulkan" : "the CPU";
  if (nvidia_gpu_present && !cuda_device && info.HasBackend("CUDA")) {
    // A CUDA build that sees no GPU: the backend is there (loaded or linked
    // in) but registered no device, and llama.cpp runs on what is left.
    w.push_back(fmt::format(
        "the engine in {} has the CUDA backend ({}) but sees no CUDA device (devices: {}): "
        "llama.cpp silently falls back to {}. Fix: check that `nvidia-smi` works, that the "
        "driver is at least as new as the CUDA runtime the engine was built with, and that "
        "CUDA_VISIBLE_DEVICES does not hide the GPU",
        info.dir, BackendSourceName(info.backend_source),
        devs.empty() ? "none" : fmt::format("{}", fmt::join(devs, ", ")), fallback));
  } else if (nvidia_gpu_present && !cuda_device) {
    w.push_back(fmt::format(
        "this machine has an NVIDIA GPU but the engine in {} has no CUDA backend (backends: {}; "
        "devices: {}): llama.cpp silently falls back to {}, typically 20-40% slower or worse. "
        "Fix: use a CUDA build of llama.cpp (cmake -B build -DGGML_CUDA=ON && cmake --build "
        "build) and pass --llama-dir /path/to/llama.cpp/build/bin or set MOETUNE_LLAMA_DIR; "
        "check that `nvidia-smi` works and the CUDA runtime libraries are installed",
        info.dir,
        info.backends.empty() ? "unknown" : fmt::format("{}", fmt::join(info.backends, ", ")),
        devs.empty() ? "none" : fmt::format("{}", fmt::join(devs, ", ")), fallback));
  }
  if (!info.bench_flags.empty() &&
      !info.HasBenchFlag(Flag(FlagId::kNCpuMoe).SpellingFor(kToolBench))) {
    w.push_back(
        "llama-bench lacks -ncmoe/--n-cpu-moe (an old build): moetune places experts with -ot "
        "patterns "
        "instead; update llama.cpp for the simplest placements");
  }
  return w;
}

namespace {

// A folder of llama.cpp's Windows tools is the likely mistake under WSL: say so.
std::string WindowsBuildNote(const std::string& dir) {
  const std::string tool = WindowsToolIn(dir);
  if (tool.empty()) return "";
  return fmt::format(
      "; {} is a Windows build, which moetune cannot run (`moetune doctor --llama-dir '{}'` "
      "says how to use it from WSL, docs/platforms.md)",
      tool, dir);
}

}  // namespace

Result<EngineInfo> DiscoverEngine(const DiscoveryOptions& options) {
  EngineInfo info;
  std::vector<std::string> looked;
  std::optional<std::string> dir;
  if (!options.llama_dir.empty()) {
    dir = ToolDirIn(options.llama_dir);
    if (!dir) {
      return Error(ErrorKind::kNotFound,
                   fmt::format("--llama-dir '{}' holds no executable llama-bench (looked in it, "
                               "bin/ and build/bin/){}; "
                               "point it at the folder with llama.cpp's tools",
                               options.llama_dir, WindowsBuildNote(options.llama_dir)));
    }
    info.origin = "--llama-dir";
  }
  if (!dir) {
    if (const char* env = std::getenv("MOETUNE_LLAMA_DIR"); env != nullptr && *env != '\0') {
      dir = ToolDirIn(env);
      if (!dir) {
        return Error(
            ErrorKind::kNotFound,
            fmt::format(
                "MOETUNE_LLAMA_DIR='{}' holds no executable llama-bench (looked in it, bin/ and "
                "build/bin/){}; fix the variable or unset it to use the default engine",
                env, WindowsBuildNote(env)));
      }
      info.origin = "MOETUNE_LLAMA_DIR";
    }
  }
  if (!dir) {
    const std::string def = DefaultEngineDir();
    looked.push_back(def);
    dir = ToolDirIn(def);
    if (dir) info.origin = "default engine";
  }
  if (!dir) {
    auto in_path = ResolveProgram(std::string(kBench));
    looked.push_back("PATH");
    if (in_path.ok()) {
      dir = fs::path(*in_path).parent_path().string();
      info.origin = "PATH";
    }
  }
  if (!dir) {
    return Error(
        ErrorKind::kNotFound,
        fmt::format(
            "no llama.cpp engine found (looked in {}); install the default one with "
            "scripts/setup-engine.sh, or pass --llama-dir DIR / set MOETUNE_LLAMA_DIR to a folder "
            "with llama-bench",
            fmt::join(looked, ", ")));
  }
  info.dir = *dir;
  if (!options.probe) return info;

  MOETUNE_TRY(ProbeEngine(&info));
  for (auto& w : EngineWarnings(info, NvidiaGpuPresent(options.system_root)))
    info.warnings.push_back(std::move(w));
  return info;
}

EngineProbe EngineProbeFromInfo(const EngineInfo& info) {
  EngineProbe probe;
  probe.llama_bench = info.ToolPath("llama-bench");
  probe.ran = true;
  for (const auto& d : info.devices) {
    std::string line = fmt::format("{}: {}", d.name, d.description);
    if (d.total && d.free) {
      line += fmt::format(" ({} MiB, {} MiB free)", d.total->count() >> 20, d.free->count() >> 20);
    }
    probe.devices.push_back(std::move(line));
    // Device names are the backend's: CUDA0, Vulkan0, ROCm0 (HIP builds).
    const std::string backend = BackendOfDevice(d.name);
    if (backend == "CUDA") probe.has_cuda = true;
    if (backend == "Vulkan") probe.has_vulkan = true;
    if (backend == "ROCm") probe.has_rocm = true;
  }
  // has_* say a device of that backend is seen (what runs the model); a
  // backend without a device is a silent fallback (engine_traps.cc).
  probe.cuda_backend = info.HasBackend("CUDA");
  probe.backends = info.backends;
  probe.backend_source = std::string(BackendSourceName(info.backend_source));
  return probe;
}

EngineProbe EngineProbeFromError(const Error& error) {
  EngineProbe probe;
  probe.note = error.message();
  return probe;
}

}  // namespace moetune
