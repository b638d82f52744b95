#include "doctor/platform_verdicts.h"

#include <gtest/gtest.h>

#include <string>

namespace moetune {
namespace {

const Verdict* Find(const std::vector<Verdict>& v, const std::string& id) {
  for (const auto& x : v) {
    if (x.id == id) return &x;
  }
  return nullptr;
}

std::string AllText(const std::vector<Verdict>& v) {
  std::string all;
  for (const auto& x : v) all += x.title + "\n" + x.detail + "\n" + x.fix + "\n";
  return all;
}

Platform Detect(const char* osrelease, const std::string& engine = "") {
  PlatformInputs in;
  in.osrelease = osrelease;
  in.env = {{"WSL_DISTRO_NAME", "Ubuntu"}};
  in.engine_path = engine;
  return DetectPlatform(in);
}

MachineProfile NvidiaMachine() {
  MachineProfile p;
  GpuInfo g;
  g.vendor = "nvidia";
  g.name = "NVIDIA GeForce RTX 4070";
  g.total_bytes = int64_t{12} << 30;
  g.free_bytes = int64_t{11} << 30;
  p.gpus.push_back(g);
  return p;
}

TEST(PlatformVerdictsTest, Wsl2WithNvidiaNamesTheDriverSettingAndTheWatchRule) {
  VerdictInputs in;
  in.profile = NvidiaMachine();
  in.platform = Detect("5.15.167.4-microsoft-standard-WSL2");
  const auto verdicts = MakeVerdicts(in);
  const Verdict* v = Find(verdicts, "wsl2_gpu");
  ASSERT_NE(v, nullptr) << AllText(verdicts);
  // A warning, so that tune carries it into its checks and report (it skips "info").
  EXPECT_EQ(v->severity, "warning");
  const std::string text = v->title + v->detail + v->fix;
  EXPECT_NE(text.find("CUDA - Sysmem Fallback Policy"), std::string::npos) << text;
  EXPECT_NE(text.find("Prefer No Sysmem Fallback"), std::string::npos) << text;
  EXPECT_NE(text.find("load failure"), std::string::npos) << text;
  EXPECT_NE(text.find("microsoft/WSL#11050"), std::string::npos) << text;
  EXPECT_NE(text.find("moetune watch"), std::string::npos) << text;
  EXPECT_NE(text.find("time to first token growing with the conversation"), std::string::npos);
  EXPECT_NE(text.find(".wslconfig"), std::string::npos) << text;
  EXPECT_NE(text.find("distribution Ubuntu"), std::string::npos) << text;
  EXPECT_EQ(Find(verdicts, "wsl2_no_gpu"), nullptr);
}

TEST(PlatformVerdictsTest, Wsl2WithoutGpuIsOnlyInformation) {
  VerdictInputs in;  // no GPU in the profile
  in.platform = Detect("5.15.167.4-microsoft-standard-WSL2");
  const auto verdicts = MakeVerdicts(in);
  const Verdict* v = Find(verdicts, "wsl2_no_gpu");
  ASSERT_NE(v, nullptr) << AllText(verdicts);
  EXPECT_EQ(v->severity, "info");
  EXPECT_NE(v->fix.find("driver on Windows"), std::string::npos) << v->fix;
  EXPECT_EQ(Find(verdicts, "wsl2_gpu"), nullptr);
}

TEST(PlatformVerdictsTest, Wsl1SaysWsl2IsNeeded) {
  VerdictInputs in;
  in.platform = Detect("4.4.0-19041-Microsoft");
  const auto verdicts = MakeVerdicts(in);
  const Verdict* v = Find(verdicts, "wsl1_no_gpu");
  ASSERT_NE(v, nullptr) << AllText(verdicts);
  EXPECT_NE(v->fix.find("wsl --set-version"), std::string::npos) << v->fix;
}

TEST(PlatformVerdictsTest, WindowsEngineSaysHowToRunFromWsl) {
  VerdictInputs in;
  in.profile = NvidiaMachine();
  in.platform = Detect("5.15.167.4-microsoft-standard-WSL2", "/mnt/c/llama/llama-bench.exe");
  const auto verdicts = MakeVerdicts(in);
  const Verdict* v = Find(verdicts, "windows_engine");
  ASSERT_NE(v, nullptr) << AllText(verdicts);
  EXPECT_EQ(v->severity, "warning");
  EXPECT_NE(v->title.find("/mnt/c/llama/llama-bench.exe"), std::string::npos) << v->title;
  // Both ways: a Linux build inside WSL, or the Windows build driven by emitted commands.
  EXPECT_NE(v->fix.find("-DGGML_CUDA=ON"), std::string::npos) << v->fix;
  EXPECT_NE(v->fix.find("--llama-dir"), std::string::npos) << v->fix;
  EXPECT_NE(v->fix.find("--emit powershell"), std::string::npos) << v->fix;
  EXPECT_NE(v->fix.find("Prefer No Sysmem Fallback"), std::string::npos) << v->fix;
  EXPECT_NE(v->fix.find("moetune watch"), std::string::npos) << v->fix;
  EXPECT_NE(Find(verdicts, "wsl2_gpu"), nullptr);
}

TEST(PlatformVerdictsTest, SharedMemoryGpu) {
  PlatformInputs pi;
  pi.device_tree_compatible = std::string("nvidia,tegra234") + '\0';
  VerdictInputs in;
  in.platform = DetectPlatform(pi);
  const auto verdicts = MakeVerdicts(in);
  const Verdict* v = Find(verdicts, "shared_memory_gpu");
  ASSERT_NE(v, nullptr) << AllText(verdicts);
  EXPECT_NE(v->title.find("nvidia,tegra234"), std::string::npos) << v->title;
  EXPECT_NE(v->fix.find("moetune watch"), std::string::npos) << v->fix;
}

TEST(PlatformVerdictsTest, PlainLinuxAndUndetectedSayNothingAboutWindows) {
  PlatformInputs pi;
  pi.osrelease = "6.1.0-18-amd64";
  pi.engine_path = "/work/engine/bin/llama-bench";
  for (const std::optional<Platform>& platform :
       {std::optional<Platform>(DetectPlatform(pi)), std::optional<Platform>()}) {
    VerdictInputs in;
    in.profile = NvidiaMachine();
    in.platform = platform;
    const std::string text = AllText(MakeVerdicts(in));
    EXPECT_EQ(text.find("Sysmem"), std::string::npos) << text;
    EXPECT_EQ(text.find("WSL"), std::string::npos) << text;
  }
  EXPECT_TRUE(PlatformVerdicts(DetectPlatform(pi), 1).empty());
}

TEST(PlatformVerdictsTest, OneVerdictPerFinding) {
  PlatformInputs pi;
  pi.osrelease = "5.15.167.4-microsoft-standard-WSL2";
  pi.engine_path = "/mnt/d/llama";
  pi.device_tree_compatible = "nvidia,tegra194";
  const Platform p = DetectPlatform(pi);
  const auto findings = PlatformFindings(p, 1);
  const auto verdicts = PlatformVerdicts(p, 1);
  ASSERT_EQ(verdicts.size(), findings.size());
  for (size_t i = 0; i < findings.size(); ++i)
    EXPECT_EQ(verdicts[i].id, PlatformFindingId(findings[i]));
}

}  // namespace
}  // namespace moetune
