#include "hw/machine_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace moetune {
namespace {

MachineProfile Sample() {
  MachineProfile p;
  p.created_at = "2026-11-30T10:00:00Z";
  p.hostname = "box";
  GpuInfo g;
  g.index = 0;
  g.vendor = "nvidia";
  g.name = "NVIDIA GeForce RTX 4090";
  g.total_bytes = 24LL << 30;
  g.free_bytes = 22LL << 30;
  g.used_by_others_bytes = 1LL << 30;
  g.processes = {{4242, "firefox", 1LL << 30}, {4343, "Xorg", std::nullopt}};
  g.pcie_gen_max = 4;
  g.pcie_width_max = 16;
  p.gpus.push_back(g);
  p.cpu = ReadCpuTopology(
      SysRoot(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/hw/intel_hybrid_6p8e"), false);
  p.memory.total_bytes = 64LL << 30;
  p.memory.available_bytes = 58LL << 30;
  BandwidthResult bw;
  bw.read_gbps = 71.5;
  bw.pass_gbps = {70.1, 71.5};
  p.bandwidth = bw;
  return p;
}

TEST(MachineProfile, JsonRoundTrip) {
  const MachineProfile p = Sample();
  auto back = MachineProfileFromJson(MachineProfileToJson(p));
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->gpus.size(), 1u);
  EXPECT_EQ(back->gpus[0].free_bytes, 22LL << 30);
  EXPECT_EQ(back->gpus[0].processes.size(), 2u);
  EXPECT_FALSE(back->gpus[0].processes[1].used_bytes.has_value());
  EXPECT_EQ(back->cpu.logical_cpus, 20);
  EXPECT_EQ(back->cpu.suggested_threads.size(), 3u);
  EXPECT_EQ(back->cpu.suggested_threads[1].threads, 6);
  ASSERT_TRUE(back->bandwidth.has_value());
  EXPECT_DOUBLE_EQ(back->bandwidth->read_gbps, 71.5);
  EXPECT_EQ(back->TotalFreeVramBytes(), 22LL << 30);
}

TEST(MachineProfile, SaveAndLoadAtomically) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("moetune-profile-" + std::to_string(::getpid()));
  const std::string path = (dir / "sub/machine.json").string();
  ASSERT_TRUE(SaveMachineProfile(Sample(), path).ok());
  auto loaded = LoadMachineProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message();
  EXPECT_EQ(loaded->hostname, "box");
  // No temp file left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir / "sub"))
    files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  std::filesystem::remove_all(dir);
}

TEST(MachineProfile, LoadErrorsSayWhatToDo) {
  auto missing = LoadMachineProfile("/nonexistent-moetune/machine.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find("moetune doctor"), std::string::npos);

  const auto path = std::filesystem::temp_directory_path() /
                    ("moetune-bad-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"schema_version": 1, "gpus": "no"})";
  auto bad = LoadMachineProfile(path.string());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kFormat);
  EXPECT_NE(bad.error().message().find(path.string()), std::string::npos);
  std::filesystem::remove(path);

  // A directory is named as one (it was "not valid JSON"); /dev/zero is
  // refused at once (it was read without end).
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto is_dir = LoadMachineProfile(dir);
  ASSERT_FALSE(is_dir.ok());
  EXPECT_NE(is_dir.error().message().find("is a directory"), std::string::npos)
      << is_dir.error().message();
  EXPECT_EQ(is_dir.error().message().find("JSON"), std::string::npos);
  auto zero = LoadMachineProfile("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message().find("character device"), std::string::npos)
      << zero.error().message();
}

// A mistyped or hostile field is an error naming the field, never an exception
// (nlohmann's value() threw on "free_bytes": "lots" and converted 1e300 to an
// integer, which is undefined behaviour).
TEST(MachineProfile, MistypedOrAbsurdFieldsAreNamedErrors) {
  const nlohmann::json good = MachineProfileToJson(Sample());
  ASSERT_TRUE(MachineProfileFromJson(good).ok());
  struct Case {
    nlohmann::json::json_pointer where;
    nlohmann::json value;
    std::string field;
  };
  using P = nlohmann::json::json_pointer;
  const std::vector<Case> cases = {
      {P("/gpus/0/free_bytes"), "lots", "gpus[0].free_bytes"},
      {P("/gpus/0/free_bytes"), -1, "gpus[0].free_bytes"},
      {P("/gpus/0/free_bytes"), int64_t{25} << 30, "gpus[0].free_bytes"},  // above the total
      {P("/gpus/0/total_bytes"), 1e300, "gpus[0].total_bytes"},
      {P("/gpus/0/name"), 42, "gpus[0].name"},
      {P("/gpus/0/processes/1/pid"), -5, "gpus[0].processes[1].pid"},
      {P("/gpus/0/pcie/gen_max"), "four", "gpus[0].pcie.gen_max"},
      {P("/gpus/0/notes"), "not a list", "gpus[0].notes"},
      {P("/cpu/physical_cores"), 2.5, "cpu.physical_cores"},
      {P("/cpu/suggested_threads/0/threads"), 0, "cpu.suggested_threads[0].threads"},
      {P("/cpu/cpu_quota"), "half", "cpu.cpu_quota"},
      {P("/memory/total_bytes"), -1, "memory.total_bytes"},
      {P("/memory/read_bandwidth_gbps"), "fast", "memory.read_bandwidth_gbps"},
      {P("/memory/read_bandwidth/passes_gbps"), nlohmann::json::array({1, "x"}),
       "memory.read_bandwidth.passes_gbps"},
      {P("/gpus"), nlohmann::json::object(), "gpus"},
      {P("/schema_version"), "1", "schema_version"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = good;
    j[c.where] = c.value;
    auto p = MachineProfileFromJson(j);
    ASSERT_FALSE(p.ok()) << c.field;
    EXPECT_EQ(p.error().kind(), ErrorKind::kFormat);
    EXPECT_NE(p.error().message().find("'" + c.field + "'"), std::string::npos)
        << p.error().message();
    EXPECT_NE(p.error().message().find("moetune doctor"), std::string::npos) << p.error().message();
  }
  nlohmann::json missing = good;
  missing["cpu"].erase("physical_cores");
  auto m = MachineProfileFromJson(missing);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("'cpu.physical_cores' is missing"), std::string::npos)
      << m.error().message();
  EXPECT_FALSE(MachineProfileFromJson(nlohmann::json::array()).ok());
  EXPECT_FALSE(MachineProfileFromJson(nlohmann::json("profile")).ok());
}

TEST(MachineProfile, LoadNamesTheFileAndTheField) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("moetune-typo-" + std::to_string(::getpid()) + ".json");
  nlohmann::json j = MachineProfileToJson(Sample());
  j["gpus"][0]["free_bytes"] = "22GiB";
  std::ofstream(path) << j.dump();
  auto p = LoadMachineProfile(path.string());
  std::filesystem::remove(path);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find(path.string()), std::string::npos) << p.error().message();
  EXPECT_NE(p.error().message().find("gpus[0].free_bytes"), std::string::npos)
      << p.error().message();
}

TEST(MachineProfile, NamesThatAreNotUtf8AreSavedAndLoaded) {
  // A GPU or host name from a driver may be any bytes: saving threw in dump().
  MachineProfile p = Sample();
  p.hostname = "box\xff";
  p.gpus[0].name = "GPU\xfe\x1b[2J";
  const auto dir =
      std::filesystem::temp_directory_path() / ("moetune-utf8-" + std::to_string(::getpid()));
  const std::string path = (dir / "machine.json").string();
  ASSERT_TRUE(SaveMachineProfile(p, path).ok());
  auto back = LoadMachineProfile(path);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->gpus[0].free_bytes, p.gpus[0].free_bytes);
  EXPECT_NE(back->hostname.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

TEST(MachineProfile, DefaultPathFollowsEnvironment) {
  const char* old_profile = std::getenv("MOETUNE_PROFILE");
  const char* old_xdg = std::getenv("XDG_CONFIG_HOME");
  const std::string saved_profile = old_profile ? old_profile : "";
  const std::string saved_xdg = old_xdg ? old_xdg : "";
  ::setenv("MOETUNE_PROFILE", "/tmp/p.json", 1);
  EXPECT_EQ(DefaultMachineProfilePath(), "/tmp/p.json");
  ::unsetenv("MOETUNE_PROFILE");
  ::setenv("XDG_CONFIG_HOME", "/cfg", 1);
  EXPECT_EQ(DefaultMachineProfilePath(), "/cfg/moetune/machine.json");
  if (old_profile) ::setenv("MOETUNE_PROFILE", saved_profile.c_str(), 1);
  if (old_xdg)
    ::setenv("XDG_CONFIG_HOME", saved_xdg.c_str(), 1);
  else
    ::unsetenv("XDG_CONFIG_HOME");
}

}  // namespace
}  // namespace moetune
