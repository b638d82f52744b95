#include "hw/platform.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace moetune {
namespace {

using namespace std::string_literals;

// Kernel strings as WSL reports them (microsoft/WSL#4555, powersj/whatsthis#10).
constexpr const char* kWsl2Release = "5.15.167.4-microsoft-standard-WSL2\n";
constexpr const char* kWsl2OldVersion =
    "Linux version 4.19.128-microsoft-standard (oe-user@oe-host) (gcc version 8.2.0 (GCC)) #1 "
    "SMP Tue Jun 23 12:58:10 UTC 2020\n";
constexpr const char* kWsl1Release = "4.4.0-19041-Microsoft\n";
constexpr const char* kDebianRelease = "6.1.0-18-amd64\n";

bool Has(const std::vector<PlatformFinding>& v, PlatformFinding f) {
  return std::find(v.begin(), v.end(), f) != v.end();
}

TEST(PlatformTest, PlainLinuxFindsNothing) {
  PlatformInputs in;
  in.osrelease = kDebianRelease;
  in.proc_version = "Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org) ...\n";
  in.engine_path = "/usr/lib/llama.cpp/llama-bench";
  const Platform p = DetectPlatform(in);
  EXPECT_EQ(p.kernel, HostKernel::kLinux);
  EXPECT_FALSE(p.windows_engine);
  EXPECT_FALSE(p.shared_memory_gpu);
  EXPECT_TRUE(PlatformFindings(p, 1).empty());
}

TEST(PlatformTest, Wsl2FromOsrelease) {
  PlatformInputs in;
  in.osrelease = kWsl2Release;
  in.env = {{"WSL_DISTRO_NAME", "Ubuntu-24.04"}};
  const Platform p = DetectPlatform(in);
  EXPECT_EQ(p.kernel, HostKernel::kWsl2);
  EXPECT_NE(p.evidence.find("microsoft-standard-WSL2"), std::string::npos) << p.evidence;
  EXPECT_EQ(p.wsl_distro, "Ubuntu-24.04");
  const auto with_gpu = PlatformFindings(p, 1);
  EXPECT_TRUE(Has(with_gpu, PlatformFinding::kWsl2Gpu));
  EXPECT_FALSE(Has(with_gpu, PlatformFinding::kWsl2NoGpu));
  const auto without = PlatformFindings(p, 0);
  EXPECT_TRUE(Has(without, PlatformFinding::kWsl2NoGpu));
  EXPECT_FALSE(Has(without, PlatformFinding::kWsl2Gpu));
}

TEST(PlatformTest, OlderWsl2KernelFromProcVersion) {
  PlatformInputs in;
  in.proc_version = kWsl2OldVersion;  // no osrelease: the version line is read
  EXPECT_EQ(DetectPlatform(in).kernel, HostKernel::kWsl2);
}

TEST(PlatformTest, Wsl1HasItsOwnFinding) {
  PlatformInputs in;
  in.osrelease = kWsl1Release;
  const Platform p = DetectPlatform(in);
  EXPECT_EQ(p.kernel, HostKernel::kWsl1);
  const auto f = PlatformFindings(p, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0], PlatformFinding::kWsl1NoGpu);
}

TEST(PlatformTest, CustomWsl2KernelFromEnvironment) {
  PlatformInputs in;
  in.osrelease = "6.6.30-my-own-kernel\n";
  in.env = {{"WSL_DISTRO_NAME", "Debian"}};
  Platform p = DetectPlatform(in);
  EXPECT_EQ(p.kernel, HostKernel::kWsl2);
  EXPECT_NE(p.evidence.find("WSL_DISTRO_NAME=Debian"), std::string::npos) << p.evidence;
  in.env = {{"WSL_INTEROP", "/run/WSL/1_interop"}};
  EXPECT_EQ(DetectPlatform(in).kernel, HostKernel::kWsl2);
  in.env = {{"HOME", "/root"}};
  EXPECT_EQ(DetectPlatform(in).kernel, HostKernel::kLinux);
}

TEST(PlatformTest, WindowsPaths) {
  EXPECT_TRUE(IsWindowsPath("/mnt/c/llama.cpp/llama-bench.exe"));
  EXPECT_TRUE(IsWindowsPath("/mnt/d/tools/llama"));
  EXPECT_TRUE(IsWindowsPath("/mnt/e"));
  EXPECT_TRUE(IsWindowsPath("/home/u/win/LLAMA-SERVER.EXE"));
  EXPECT_FALSE(IsWindowsPath("/mnt/data/llama.cpp/build/bin"));  // not a drive letter
  EXPECT_FALSE(IsWindowsPath("/home/u/llama.cpp/build/bin/llama-bench"));
  EXPECT_FALSE(IsWindowsPath(""));
  EXPECT_FALSE(IsWindowsPath(".exe"));
}

TEST(PlatformTest, WindowsToolInAFolderOrByName) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / "moetune-windows-tools";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "linux");
  std::ofstream(dir / "llama-server.exe") << "MZ";
  std::ofstream(dir / "linux" / "llama-bench") << "#!/bin/sh\n";
  EXPECT_EQ(WindowsToolIn(dir.string()), (dir / "llama-server.exe").string());
  EXPECT_EQ(WindowsToolIn((dir / "linux").string()), "");
  EXPECT_EQ(WindowsToolIn("/nowhere/llama-bench.exe"), "/nowhere/llama-bench.exe");
  EXPECT_EQ(WindowsToolIn("/nowhere"), "");
  EXPECT_EQ(WindowsToolIn(""), "");
  std::filesystem::remove_all(dir);
}

TEST(PlatformTest, WindowsEngineFromWsl) {
  PlatformInputs in;
  in.osrelease = kWsl2Release;
  in.engine_path = "/mnt/c/Users/me/llama.cpp";
  Platform p = DetectPlatform(in);
  EXPECT_TRUE(p.windows_engine);
  EXPECT_TRUE(Has(PlatformFindings(p, 1), PlatformFinding::kWindowsEngine));
  // The same folder name on plain Linux is just a folder; a .exe is Windows anywhere.
  in.osrelease = kDebianRelease;
  EXPECT_FALSE(DetectPlatform(in).windows_engine);
  in.engine_path = "/srv/win/llama-bench.exe";
  EXPECT_TRUE(DetectPlatform(in).windows_engine);
  // A Linux build inside WSL is not a Windows engine.
  in.osrelease = kWsl2Release;
  in.engine_path = "/home/me/llama.cpp/build/bin/llama-bench";
  p = DetectPlatform(in);
  EXPECT_FALSE(p.windows_engine);
  EXPECT_FALSE(Has(PlatformFindings(p, 1), PlatformFinding::kWindowsEngine));
}

TEST(PlatformTest, TegraSharesMemory) {
  PlatformInputs in;
  in.osrelease = "5.15.136-tegra\n";
  in.device_tree_compatible = "nvidia,p3737-0000+p3701-0000\0nvidia,tegra234\0"s;
  const Platform p = DetectPlatform(in);
  EXPECT_TRUE(p.shared_memory_gpu);
  EXPECT_EQ(p.shared_memory_evidence, "device tree 'nvidia,tegra234'");
  EXPECT_TRUE(Has(PlatformFindings(p, 0), PlatformFinding::kSharedMemoryGpu));
  in.device_tree_compatible = "raspberrypi,5-model-b\0brcm,bcm2712\0"s;
  EXPECT_FALSE(DetectPlatform(in).shared_memory_gpu);
}

TEST(PlatformTest, ReadsInputsUnderRootAndResolvesAWindowsToolFolder) {
  const auto dir =
      std::filesystem::temp_directory_path() /
      ("moetune-platform-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "root/proc/sys/kernel");
  std::filesystem::create_directories(dir / "win");
  std::ofstream(dir / "root/proc/sys/kernel/osrelease") << kWsl2Release;
  std::ofstream(dir / "root/proc/version") << kWsl2OldVersion;
  std::ofstream(dir / "win/llama-bench.exe") << "MZ";
  const PlatformInputs in =
      ReadPlatformInputs(SysRoot((dir / "root").string()), {}, (dir / "win").string());
  EXPECT_EQ(in.osrelease, kWsl2Release);
  EXPECT_EQ(in.proc_version, kWsl2OldVersion);
  EXPECT_EQ(in.device_tree_compatible, "");
  EXPECT_EQ(in.engine_path, (dir / "win" / "llama-bench.exe").string());
  const Platform p = DetectPlatform(in);
  EXPECT_EQ(p.kernel, HostKernel::kWsl2);
  EXPECT_TRUE(p.windows_engine);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moetune
