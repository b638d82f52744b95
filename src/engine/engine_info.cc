#include "engine/engine_info.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "util/subprocess.h"

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

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out.emplace_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::string Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

// Runs one probe of the engine; stdout and stderr together (versions differ
// in which stream they use for --version and --list-devices).
Result<std::string> Probe(const std::string& tool, const std::vector<std::string>& args) {
  RunOptions o;
  o.spawn.argv = {tool};
  o.spawn.argv.insert(o.spawn.argv.end(), args.begin(), args.end());
  o.timeout = std::chrono::milliseconds(60000);
  std::string all;
  o.capture_stdout = false;
  o.stderr_tail_lines = 0;
  o.on_stdout_line = [&](std::string_view l) { all.append(l).push_back('\n'); };
  o.on_stderr_line = [&](std::string_view l) { all.append(l).push_back('\n'); };
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
std::string ProbeCacheFile(const std::string& bench) {
  std::error_code ec;
  const auto size = fs::file_size(bench, ec);
  if (ec) return "";
  const auto mtime = fs::last_write_time(bench, ec).time_since_epoch().count();
  if (ec) return "";
  fs::path base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    base = x;
  } else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    base = fs::path(h) / ".cache";
  } else {
    return "";
  }
  const std::size_t key = std::hash<std::string>{}(fmt::format("{}|{}|{}", bench, size, mtime));
  return (base / "moetune" / fmt::format("engine-{:016x}.json", key)).string();
}

bool ReadProbeCache(const std::string& file, Result<std::string>* version,
                    Result<std::string>* help) {
  if (file.empty()) return false;
  std::ifstream f(file);
  if (!f) return false;
  const auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded() || !j.contains("version") || !j.contains("help") ||
      !j["version"].is_string() || !j["help"].is_string()) {
    return false;
  }
  *version = j["version"].get<std::string>();
  *help = j["help"].get<std::string>();
  return true;
}

void WriteProbeCache(const std::string& file, const std::string& version, const std::string& help) {
  if (file.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(file).parent_path(), ec);
  const std::string tmp = fmt::format("{}.tmp.{}", file, ::getpid());
  {
    std::ofstream f(tmp);
    f << nlohmann::json{{"version", version}, {"help", help}}.dump();
    if (!f) return;
  }
  fs::rename(tmp, file, ec);  // best effort: a cache that cannot be written is only slower
  if (ec) fs::remove(tmp, ec);
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

void ParseVersionOutput(std::string_view text, EngineInfo* info) {
  static const std::regex kVersion(R"(^version:\s*(\S+)\s*\((.*)\)\s*$)");
  static const std::regex kBuild(R"(build\s+(\d+))");
  static const std::regex kCommit(R"(commit\s+([^,\s)]+))");
  for (const auto& raw : Lines(text)) {
    const std::string line = Trim(raw);
    std::smatch m;
    if (std::regex_match(line, m, kVersion)) {
      info->version_line = line;
      const std::string first = m[1];
      const std::string paren = m[2];
      std::smatch b;
      if (std::regex_search(paren, b, kBuild)) {
        info->version = first;
        info->build_number = std::stoll(b[1]);
        std::smatch c;
        if (std::regex_search(paren, c, kCommit)) info->commit = c[1];
      } else {
        // Upstream builds print "version: <build number> (<commit>)".
        if (!first.empty() && first.find_first_not_of("0123456789") == std::string::npos) {
          info->build_number = std::stoll(first);
        } else {
          info->version = first;
        }
        info->commit = Trim(paren);
      }
    } else if (line.rfind("built with ", 0) == 0) {
      info->built_with = line.substr(11);
    }
  }
}

std::vector<EngineDevice> ParseListDevices(std::string_view text) {
  // "  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23000 MiB free)"
  static const std::regex kDevice(
      R"(^\s+([A-Za-z][\w-]*\d*):\s*(.*?)\s*\((\d+)\s*MiB,\s*(\d+)\s*MiB free\)\s*$)");
  static const std::regex kBare(R"(^\s+([A-Za-z][\w-]*\d+):\s*(.*?)\s*$)");
  std::vector<EngineDevice> out;
  bool in_list = false;
  for (const auto& line : Lines(text)) {
    if (line.find("Available devices") != std::string::npos) {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    std::smatch m;
    if (std::regex_match(line, m, kDevice)) {
      out.push_back({m[1], m[2], Bytes::MiB(std::stod(m[3])), Bytes::MiB(std::stod(m[4]))});
    } else if (std::regex_match(line, m, kBare)) {
      out.push_back({m[1], m[2], std::nullopt, std::nullopt});
    } else if (!line.empty() && line[0] != ' ') {
      in_list = false;
    }
  }
  return out;
}

std::set<std::string> ParseHelpFlags(std::string_view text) {
  std::set<std::string> flags;
  for (const auto& raw : Lines(text)) {
    const std::string line = Trim(raw);
    if (line.size() < 2 || line[0] != '-') continue;
    // "-ncmoe, --n-cpu-moe <n>   (default: 0)": flags until the first token
    // that is not one.
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      if (!w.empty() && w.back() == ',') w.pop_back();
      if (w.size() < 2 || w[0] != '-' ||
          !(std::isalpha(static_cast<unsigned char>(w[1])) || w[1] == '-'))
        break;
      flags.insert(w);
    }
  }
  return flags;
}

std::vector<std::string> ParseLoadedBackends(std::string_view text) {
  static const std::regex kLoaded(R"(load_backend: loaded (\S+) backend)");
  std::vector<std::string> out;
  for (const auto& line : Lines(text)) {
    std::smatch m;
    if (std::regex_search(line, m, kLoaded)) {
      const std::string b = m[1];
      bool seen = false;
      for (const auto& x : out) seen = seen || x == b;
      if (!seen) out.push_back(b);
    }
  }
  return out;
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
  if (!info.bench_flags.empty() && !info.HasBenchFlag("-ncmoe")) {
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
  // (path, size, mtime) so that every command does not pay two engine starts
  // (part of moetune's overhead over llama-bench). --list-devices (free
  // memory changes) always runs, concurrently with the uncached probes.
  auto devices_f = std::async(std::launch::async, [&] { return Probe(bench, {"--list-devices"}); });
  const std::string cache_file = ProbeCacheFile(bench);
  Result<std::string> version = Error(ErrorKind::kInternal, "unset");
  Result<std::string> help = Error(ErrorKind::kInternal, "unset");
  if (!ReadProbeCache(cache_file, &version, &help)) {
    auto version_f = std::async(std::launch::async, [&] { return Probe(bench, {"--version"}); });
    // --help exits non-zero in some versions; its text is all that matters.
    help = Probe(bench, {"--help"});
    version = version_f.get();
    if (version.ok() && help.ok()) WriteProbeCache(cache_file, *version, *help);
  }
  auto devices = devices_f.get();
  if (!version.ok()) return version.take_error();
  if (!devices.ok()) return devices.take_error();
  if (!help.ok()) return help.take_error();
  ParseVersionOutput(*version, &info);
  info.backends = ParseLoadedBackends(*version);
  info.devices = ParseListDevices(*devices);
  info.bench_flags = ParseHelpFlags(*help);
  if (info.version_line.empty()) {
    info.warnings.push_back(
        fmt::format("{} --version printed no version line; the engine may be very old", bench));
  }
  for (auto& w : EngineWarnings(info, NvidiaGpuPresent(options.system_root)))
    info.warnings.push_back(std::move(w));
  return info;
}

std::string FormatEngineInfo(const EngineInfo& info) {
  std::string s;
  s += fmt::format("engine:    {} ({})\n", info.dir, info.origin);
  s += fmt::format("version:   {}\n", info.version_line.empty() ? "unknown" : info.version_line);
  if (!info.built_with.empty()) s += fmt::format("built:     {}\n", info.built_with);
  s += fmt::format("backends:  {}\n", info.backends.empty()
                                          ? "unknown (no dynamic backends reported)"
                                          : fmt::format("{}", fmt::join(info.backends, ", ")));
  if (info.devices.empty()) {
    s += "devices:   none (CPU only)\n";
  } else {
    s += "devices:\n";
    for (const auto& d : info.devices) {
      s += fmt::format("  {}: {}", d.name, d.description);
      if (d.total && d.free)
        s += fmt::format(" ({} total, {} free)", FormatBytes(*d.total), FormatBytes(*d.free));
      s += "\n";
    }
  }
  std::vector<std::string> tools;
  for (const char* t : {"llama-bench", "llama-server", "llama-fit-params", "llama-cli"}) {
    if (info.HasTool(t)) tools.emplace_back(t);
  }
  s += fmt::format("tools:     {}\n", fmt::join(tools, ", "));
  std::vector<std::string> flags;
  for (const char* f : {"-ncmoe", "-ot", "-lm", "-fitt", "--progress", "-d", "-nopo"}) {
    flags.push_back(fmt::format("{}{}", f, info.HasBenchFlag(f) ? "" : " (missing)"));
  }
  s += fmt::format("llama-bench flags: {}\n", fmt::join(flags, ", "));
  for (const auto& w : info.warnings) s += fmt::format("WARNING: {}\n", w);
  return s;
}

}  // namespace moetune
