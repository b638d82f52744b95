#pragma once
/// The platform moetune runs on, where it changes what a user must know: WSL
/// (the GPU is driven by the Windows NVIDIA driver, which can place what does
/// not fit in VRAM in shared system memory without an error), a Windows build
/// of llama.cpp named from WSL (moetune cannot run it), and a GPU that shares
/// the system's memory (NVIDIA Tegra). Detected here, once, from text the
/// caller reads (ReadPlatformInputs) so that tests can fake every input;
/// doctor turns the findings into verdicts (doctor/verdicts.h), which tune
/// carries into its checks and report.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hw/sysfs.h"

namespace moetune {

/// The kernel moetune runs under.
enum class HostKernel {
  kLinux,  // a Linux kernel on its own hardware (or a VM that is not WSL)
  kWsl1,   // WSL 1: Linux system calls translated by Windows; no GPU at all
  kWsl2,   // WSL 2: a Linux kernel in a Windows VM; the GPU through the Windows driver
};

/// What the platform is detected from: file contents and names, never read
/// here (ReadPlatformInputs reads them).
struct PlatformInputs {
  std::string proc_version;  // /proc/version
  std::string osrelease;     // /proc/sys/kernel/osrelease
  /// The environment; WSL_DISTRO_NAME and WSL_INTEROP are set by WSL.
  std::map<std::string, std::string> env;
  /// The llama.cpp tool or folder moetune is pointed at ("" when none).
  std::string engine_path;
  /// /proc/device-tree/compatible (NUL-separated strings; "" without a device tree).
  std::string device_tree_compatible;
};

struct Platform {
  HostKernel kernel = HostKernel::kLinux;
  std::string wsl_distro;  // WSL_DISTRO_NAME, when set
  std::string evidence;    // what the kernel finding rests on ("" for plain Linux)
  /// The engine path names a Windows build: a .exe, or a folder under /mnt/<drive>/.
  bool windows_engine = false;
  std::string engine_path;
  /// The GPU shares the system's memory (an NVIDIA Tegra system-on-chip).
  bool shared_memory_gpu = false;
  std::string shared_memory_evidence;
};

/// A platform fact the user must act on or know; text is rendered from it in
/// one place (doctor/verdicts.cc, PlatformVerdicts).
enum class PlatformFinding {
  kWsl1NoGpu,        // WSL 1 gives Linux programs no GPU
  kWsl2Gpu,          // WSL 2 with an NVIDIA GPU: the Windows driver's silent overflow
  kWsl2NoGpu,        // WSL 2 without a GPU moetune can see
  kWindowsEngine,    // a Windows llama.cpp named from WSL
  kSharedMemoryGpu,  // the GPU's memory is the system's memory
};

/// Stable key of a finding, the verdict id ("wsl2_gpu", ...).
std::string_view PlatformFindingId(PlatformFinding finding);

/// True for a path that names a Windows program or folder as WSL sees it:
/// ending in ".exe", or under a drive mount ("/mnt/c/...", any one letter).
bool IsWindowsPath(std::string_view path);

/// The Windows llama.cpp tool `path` names: `path` itself when it ends in
/// ".exe", else llama-bench.exe or llama-server.exe in that folder (as
/// llama.cpp's Windows release archives hold them), else "".
std::string WindowsToolIn(const std::string& path);

/// Pure detection from the inputs.
Platform DetectPlatform(const PlatformInputs& in);

/// Reads /proc/version, /proc/sys/kernel/osrelease and the device tree under
/// `root`; env and engine_path are the caller's.
PlatformInputs ReadPlatformInputs(const SysRoot& root, std::map<std::string, std::string> env,
                                  std::string engine_path);

/// What applies, in the order doctor shows them. `nvidia_gpus` is how many
/// NVIDIA GPUs the driver listed.
std::vector<PlatformFinding> PlatformFindings(const Platform& platform, int nvidia_gpus);

/// "linux", "wsl1", "wsl2" (the JSON value).
std::string_view HostKernelName(HostKernel kernel);

}  // namespace moetune
