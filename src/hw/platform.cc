#include "hw/platform.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace moetune {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string Get(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

// The kernel release: osrelease, else the third word of /proc/version
// ("Linux version 5.15.167.4-microsoft-standard-WSL2 (...) ...").
std::string KernelRelease(const PlatformInputs& in) {
  std::string release(Trim(in.osrelease));
  if (!release.empty()) return release;
  const std::string_view v = in.proc_version;
  const std::string_view prefix = "Linux version ";
  if (v.substr(0, prefix.size()) != prefix) return "";
  const std::string_view rest = v.substr(prefix.size());
  return std::string(rest.substr(0, rest.find_first_of(" \n")));
}

}  // namespace

std::string_view PlatformFindingId(PlatformFinding finding) {
  switch (finding) {
    case PlatformFinding::kWsl1NoGpu:
      return "wsl1_no_gpu";
    case PlatformFinding::kWsl2Gpu:
      return "wsl2_gpu";
    case PlatformFinding::kWsl2NoGpu:
      return "wsl2_no_gpu";
    case PlatformFinding::kWindowsEngine:
      return "windows_engine";
    case PlatformFinding::kSharedMemoryGpu:
      return "shared_memory_gpu";
  }
  return "platform";
}

std::string_view HostKernelName(HostKernel kernel) {
  switch (kernel) {
    case HostKernel::kLinux:
      return "linux";
    case HostKernel::kWsl1:
      return "wsl1";
    case HostKernel::kWsl2:
      return "wsl2";
  }
  return "linux";
}

bool IsWindowsPath(std::string_view path) {
  const std::string lower = Lower(path);
  if (lower.size() > 4 && lower.compare(lower.size() - 4, 4, ".exe") == 0) return true;
  // WSL mounts each Windows drive at /mnt/<letter> (its automount root by default).
  return lower.size() >= 6 && lower.compare(0, 5, "/mnt/") == 0 && std::isalpha(lower[5]) &&
         (lower.size() == 6 || lower[6] == '/');
}

std::string WindowsToolIn(const std::string& path) {
  if (path.empty()) return "";
  const std::string lower = Lower(path);
  if (lower.size() > 4 && lower.compare(lower.size() - 4, 4, ".exe") == 0) return path;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return "";
  for (const char* tool : {"llama-bench.exe", "llama-server.exe"}) {
    const auto candidate = std::filesystem::path(path) / tool;
    if (std::filesystem::exists(candidate, ec)) return candidate.string();
  }
  return "";
}

Platform DetectPlatform(const PlatformInputs& in) {
  Platform p;
  p.wsl_distro = Get(in.env, "WSL_DISTRO_NAME");
  // WSL's kernels name Microsoft in their release, the test WSL's maintainers give
  // (microsoft/WSL#423: "Microsoft" or "WSL" in /proc/sys/kernel/osrelease or /proc/version).
  // WSL 1 reports a fixed "4.4.0-19041-Microsoft" (capital M: it has no Linux kernel);
  // WSL 2 "5.15.167.4-microsoft-standard-WSL2", older "4.19.128-microsoft-standard"
  // (microsoft/WSL#4555, powersj/whatsthis#10 list both).
  const std::string release = KernelRelease(in);
  const std::string lower = Lower(release);
  if (lower.find("microsoft") != std::string::npos || lower.find("wsl") != std::string::npos) {
    const bool v1 = release.find("Microsoft") != std::string::npos &&
                    lower.find("wsl2") == std::string::npos &&
                    lower.find("microsoft-standard") == std::string::npos;
    p.kernel = v1 ? HostKernel::kWsl1 : HostKernel::kWsl2;
    p.evidence = "kernel release '" + release + "'";
  } else if (!p.wsl_distro.empty() || !Get(in.env, "WSL_INTEROP").empty()) {
    // WSL's variables without a Microsoft kernel: a custom WSL 2 kernel (WSL 1
    // cannot run one).
    p.kernel = HostKernel::kWsl2;
    p.evidence =
        p.wsl_distro.empty() ? "WSL_INTEROP is set" : "WSL_DISTRO_NAME=" + p.wsl_distro + " is set";
  }
  p.engine_path = in.engine_path;
  if (!in.engine_path.empty()) {
    // A drive mount means Windows only under WSL; a .exe is a Windows build anywhere.
    const std::string engine = Lower(in.engine_path);
    const bool exe = engine.size() > 4 && engine.compare(engine.size() - 4, 4, ".exe") == 0;
    p.windows_engine = IsWindowsPath(in.engine_path) && (exe || p.kernel != HostKernel::kLinux);
  }
  // Tegra (Jetson) boards name the SoC in their device tree: "nvidia,tegra234".
  const std::string compatible = in.device_tree_compatible;
  const size_t tegra = compatible.find("nvidia,tegra");
  if (tegra != std::string::npos) {
    p.shared_memory_gpu = true;
    const size_t end = compatible.find('\0', tegra);
    p.shared_memory_evidence = "device tree '" + compatible.substr(tegra, end - tegra) + "'";
  }
  return p;
}

PlatformInputs ReadPlatformInputs(const SysRoot& root, std::map<std::string, std::string> env,
                                  std::string engine_path) {
  PlatformInputs in;
  in.proc_version = root.Read("/proc/version").value_or("");
  in.osrelease = root.Read("/proc/sys/kernel/osrelease").value_or("");
  in.device_tree_compatible = root.Read("/proc/device-tree/compatible").value_or("");
  in.env = std::move(env);
  // A folder of Windows tools names the one found, so that the .exe is what is judged.
  if (std::string tool = WindowsToolIn(engine_path); !tool.empty()) engine_path = std::move(tool);
  in.engine_path = std::move(engine_path);
  return in;
}

std::vector<PlatformFinding> PlatformFindings(const Platform& platform, int nvidia_gpus) {
  std::vector<PlatformFinding> out;
  if (platform.kernel == HostKernel::kWsl1) out.push_back(PlatformFinding::kWsl1NoGpu);
  if (platform.kernel == HostKernel::kWsl2) {
    out.push_back(nvidia_gpus > 0 ? PlatformFinding::kWsl2Gpu : PlatformFinding::kWsl2NoGpu);
  }
  if (platform.windows_engine) out.push_back(PlatformFinding::kWindowsEngine);
  if (platform.shared_memory_gpu) out.push_back(PlatformFinding::kSharedMemoryGpu);
  return out;
}

}  // namespace moetune
