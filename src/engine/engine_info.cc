#include "engine/engine_info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>

#include "config/flags.h"
#include "engine/engine_output.h"
#include "util/json_parse.h"
#include "util/read_file.h"
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

// Runs one probe of the engine; stdout and stderr together (versions differ
// in which stream they use for --version and --list-devices).
Result<std::string> Probe(const std::string& tool, const std::vector<std::string>& args) {
  RunOptions o;
  o.spawn.argv = {tool};
  o.spawn.argv.insert(o.spawn.argv.end(), args.begin(), args.end());
  o.timeout = std::chrono::milliseconds(60000);
  // --help is ~10 KiB; 4 MiB bounds an engine that prints without end.
  constexpr std::size_t kMaxProbeBytes = std::size_t{4} << 20;
  std::string all;
  o.capture_stdout = false;
  o.stderr_tail_lines = 0;
  auto add = [&](std::string_view l) {
    if (all.size() + l.size() < kMaxProbeBytes) all.append(l).push_back('\n');
  };
  o.on_stdout_line = add;
  o.on_stderr_line = add;
  MOETUNE_ASSIGN_OR_RETURN(RunOutput out, RunProcess(o));
  if (out.timed_out) {
    return Error(ErrorKind::kEngine,
                 fmt::format("'{} {}' did not answer within 60 s", tool, fmt::join(args, " ")));
  }
  if (!out.status.exited) {
    return Error(ErrorKind::kEngine,
                 fmt::format("'{} {}' ended by {}; the engine does not start: reinstall it "
                             "(scripts/setup-engine.sh) or pass --llama-dir",
                             tool, fmt::join(args, " "), out.status.Describe()));
  }
  return all;
}

// Cache of the static probes, in $XDG_CACHE_HOME/moetune or ~/.cache/moetune.
std::string ProbeCacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return (fs::path(x) / "moetune").string();
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return (fs::path(h) / ".cache" / "moetune").string();
  }
  return "";
}

std::string ProbeCacheFile(const std::string& key) {
  const std::string dir = ProbeCacheDir();
  if (dir.empty() || key.empty()) return "";
  return (fs::path(dir) / fmt::format("engine-{:016x}.json", std::hash<std::string>{}(key)))
      .string();
}

bool ReadProbeCache(const std::string& file, const std::string& key, std::string* version,
                    std::string* help) {
  if (file.empty()) return false;
  constexpr std::size_t kMaxCacheBytes = std::size_t{4} << 20;
  auto text = ReadRegularFile(file, kMaxCacheBytes);
  if (!text.ok()) return false;
  const auto j = ParseJsonOrDiscarded(*text);
  // The key inside guards against a hash collision between two engines.
  if (j.is_discarded() || !j.is_object() || !j.contains("key") || !j.contains("version") ||
      !j.contains("help") || !j["key"].is_string() || !j["version"].is_string() ||
      !j["help"].is_string() || j["key"].get<std::string>() != key) {
    return false;
  }
  *version = j["version"].get<std::string>();
  *help = j["help"].get<std::string>();
  return true;
}

// Best effort: a cache that cannot be written only costs two engine starts
// next time. Written to a private temporary file (mkstemp) and renamed into
// place, and the temporary file is removed on every failure.
void WriteProbeCache(const std::string& file, const std::string& key, const std::string& version,
                     const std::string& help) {
  if (file.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  // Engine output need not be UTF-8: invalid bytes become U+FFFD in the cache
  // rather than an exception (the cache feeds only the parsers, which ignore them).
  const std::string text = nlohmann::json{{"key", key}, {"version", version}, {"help", help}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string tmp = (fs::path(file).parent_path() / "engine-XXXXXX.tmp").string();
  const int fd = ::mkstemps(tmp.data(), 4);
  if (fd < 0) return;
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) ::unlink(tmp.c_str());
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
  bool cuda = info.HasBackend("CUDA");
  for (const auto& d : info.devices) cuda = cuda || d.name.rfind("CUDA", 0) == 0;
  if (nvidia_gpu_present && !cuda) {
    std::vector<std::string> devs;
    for (const auto& d : info.devices) devs.push_back(d.name);
    w.push_back(fmt::format(
        "this machine has an NVIDIA GPU but the engine in {} has no CUDA backend (backends: {}; "
        "devices: {}): "
        "llama.cpp silently falls back to {}, typically 20-40% slower or worse. Fix: use a CUDA "
        "build of llama.cpp "
        "(cmake -B build -DGGML_CUDA=ON && cmake --build build) and pass --llama-dir "
        "/path/to/llama.cpp/build/bin "
        "or set MOETUNE_LLAMA_DIR; check that `nvidia-smi` works and the CUDA runtime libraries "
        "are installed",
        info.dir,
        info.backends.empty() ? "unknown" : fmt::format("{}", fmt::join(info.backends, ", ")),
        devs.empty() ? "none" : fmt::format("{}", fmt::join(devs, ", ")),
        info.HasBackend("Vulkan") ? "Vulkan" : "the CPU"));
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

Result<EngineInfo> DiscoverEngine(const DiscoveryOptions& options) {
  EngineInfo info;
  std::vector<std::string> looked;
  std::optional<std::string> dir;
  if (!options.llama_dir.empty()) {
    dir = ToolDirIn(options.llama_dir);
    if (!dir) {
      return Error(ErrorKind::kNotFound,
                   fmt::format("--llama-dir '{}' holds no executable llama-bench (looked in it, "
                               "bin/ and build/bin/); "
                               "point it at the folder with llama.cpp's tools",
                               options.llama_dir));
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
                "build/bin/); fix the variable or unset it to use the default engine",
                env));
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

  const std::string bench = info.ToolPath(kBench);
  // --version and --help depend only on the binary: they are cached per
  // binary identity (ProbeCacheKey) so that every command does not pay two
  // engine starts (part of moetune's overhead over llama-bench). Only a probe
  // that worked is cached: a broken engine is asked again next time, so
  // "version unknown" does not outlive the fix. --list-devices (free memory
  // changes) always runs, concurrently with the uncached probes.
  auto devices_f = std::async(std::launch::async, [&] { return Probe(bench, {"--list-devices"}); });
  const std::string key = ProbeCacheKey(bench);
  const std::string cache_file = ProbeCacheFile(key);
  Result<std::string> version = Error(ErrorKind::kInternal, "unset");
  Result<std::string> help = Error(ErrorKind::kInternal, "unset");
  std::string cached_version;
  std::string cached_help;
  const bool cached = ReadProbeCache(cache_file, key, &cached_version, &cached_help);
  if (cached) {
    version = std::move(cached_version);
    help = std::move(cached_help);
  } else {
    auto version_f = std::async(std::launch::async, [&] { return Probe(bench, {"--version"}); });
    // --help exits non-zero in some versions; its text is all that matters.
    help = Probe(bench, {"--help"});
    version = version_f.get();
  }
  auto devices = devices_f.get();
  if (!version.ok()) return version.take_error();
  if (!devices.ok()) return devices.take_error();
  if (!help.ok()) return help.take_error();
  ParseVersionOutput(*version, &info);
  info.backends = ParseLoadedBackends(*version);
  info.devices = ParseListDevices(*devices);
  info.bench_flags = ParseHelpFlags(*help);
  if (!cached && !info.version_line.empty() && !info.bench_flags.empty()) {
    WriteProbeCache(cache_file, key, *version, *help);
  }
  if (info.version_line.empty()) {
    info.warnings.push_back(
        fmt::format("{} --version printed no version line; the engine may be very old", bench));
  }
  for (auto& w : EngineWarnings(info, NvidiaGpuPresent(options.system_root)))
    info.warnings.push_back(std::move(w));
  return info;
}

std::string ProbeCacheKey(const std::string& path) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(path, ec);
  if (ec) return "";
  struct stat st {};
  if (::stat(canonical.c_str(), &st) != 0) return "";
  // The change time moves with every rewrite or chmod even when a build tool
  // restores the modification time; the inode changes when a file is replaced.
  return fmt::format("{}|{}|{}.{}|{}.{}|{}:{}", canonical.string(), st.st_size, st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec, st.st_dev,
                     st.st_ino);
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
    if (d.name.starts_with("CUDA")) probe.has_cuda = true;
    if (d.name.starts_with("Vulkan")) probe.has_vulkan = true;
    if (d.name.starts_with("ROCm") || d.name.starts_with("HIP")) probe.has_rocm = true;
  }
  probe.has_cuda = probe.has_cuda || info.HasBackend("CUDA");
  probe.has_vulkan = probe.has_vulkan || info.HasBackend("Vulkan");
  probe.has_rocm = probe.has_rocm || info.HasBackend("ROCm") || info.HasBackend("HIP");
  return probe;
}

EngineProbe EngineProbeFromError(const Error& error) {
  EngineProbe probe;
  probe.note = error.message();
  return probe;
}

}  // namespace moetune
