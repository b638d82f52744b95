// Integration: text that is not UTF-8, or that carries terminal control
// sequences, in a model's metadata or in a file name. JSON output stays valid
// JSON (and says that bytes were replaced); text output and error messages
// never hand a raw control byte to the terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "support.h"
#include "util/utf8.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;

bool HasControlBytes(const std::string& s) {
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return true;
  }
  return false;
}

class HostileTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string plain = dir_.File("plain.gguf");
    auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", plain}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(plain, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Overwrite the start of general.name (same length, so the file stays valid)
    // with an escape sequence, bytes that are not UTF-8 and a C1 control.
    const std::string hostile =
        "\x1b[2J\xff\xfe\xc2\x9b"
        "31m";
    const auto at = bytes.find("Qwen3-30B-A3B");
    ASSERT_NE(at, std::string::npos);
    bytes.replace(at, hostile.size(), hostile);
    model_ = dir_.File("m\xff\x1b[2J.gguf");
    std::ofstream(model_, std::ios::binary) << bytes;
  }
  TempDir dir_;
  std::string model_;
};

TEST_F(HostileTextTest, InspectJsonIsValidAndSaysSo) {
  auto r = RunCommand({MoetuneBinary(), "inspect", model_, "--json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(IsValidUtf8(r.out));
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out.substr(0, 400);
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
}

TEST_F(HostileTextTest, InspectTextHasNoControlBytes) {
  auto r = RunCommand({MoetuneBinary(), "inspect", model_}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(HasControlBytes(r.out));
  EXPECT_FALSE(HasControlBytes(r.err));
  EXPECT_TRUE(IsValidUtf8(r.out));
  EXPECT_NE(r.out.find("\\x1b[2J"), std::string::npos) << "the escape should be shown visibly";
}

TEST_F(HostileTextTest, ErrorMessagesHaveNoControlBytes) {
  auto r = RunCommand({MoetuneBinary(), "inspect", dir_.File("missing\x1b[2J\xff.gguf")}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(r.err.empty());
  EXPECT_FALSE(HasControlBytes(r.err)) << r.err;
  EXPECT_TRUE(IsValidUtf8(r.err));
}

// Runs `argv` and expects valid JSON on stdout, valid UTF-8 throughout, no raw
// control byte on stderr, and the note that bytes were replaced.
void ExpectValidJsonThatSaysSo(const std::vector<std::string>& argv, double timeout_s = 120) {
  auto r = RunCommand(argv, timeout_s);
  SCOPED_TRACE(argv[1]);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(IsValidUtf8(r.out));
  EXPECT_TRUE(nlohmann::json::accept(r.out)) << r.out.substr(0, 400);
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
  EXPECT_FALSE(HasControlBytes(r.err)) << r.err;
}

TEST_F(HostileTextTest, PlanJsonIsValidAndSaysSo) {
  ExpectValidJsonThatSaysSo({MoetuneBinary(), "plan", model_, "--vram", "8GiB", "--json"});
}

TEST_F(HostileTextTest, PlanTextHasNoControlBytes) {
  auto r = RunCommand({MoetuneBinary(), "plan", model_, "--vram", "8GiB"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(HasControlBytes(r.out));
  EXPECT_FALSE(HasControlBytes(r.err));
  EXPECT_TRUE(IsValidUtf8(r.out));
}

TEST_F(HostileTextTest, DoctorJsonWithTheModelIsValidAndSaysSo) {
  ExpectValidJsonThatSaysSo({MoetuneBinary(), "doctor", "--model", model_, "--json",
                             "--no-bandwidth", "--no-engine", "--no-save"});
}

TEST_F(HostileTextTest, BenchDryRunShowsTheNameWithoutControlBytes) {
  auto r = RunCommand(
      {MoetuneBinary(), "bench", model_, "-t", "1", "-p", "16", "-n", "0", "--dry-run"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(HasControlBytes(r.out)) << r.out;
  EXPECT_NE(r.out.find("\\x1b[2J"), std::string::npos) << r.out;
}

TEST_F(HostileTextTest, BenchJsonIsValidAndSaysSo) {
  // A real (one-test) run: the results name the model file.
  ExpectValidJsonThatSaysSo({MoetuneBinary(), "bench", model_, "-t", "1", "-p", "16", "-n", "0",
                             "-r", "1", "--no-progress", "--json"},
                            600);
}

// An engine whose version and device lines carry \xff and an escape sequence.
class HostileEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = dir_.path() / "odd-engine";
    fs::create_directories(engine_);
    std::ofstream(engine_ / "llama-bench")
        << "#!/bin/sh\ncase \"$1\" in\n  --version) printf 'version: 7 (\\377\\033[2J)\\n' ;;\n"
        << "  --help) echo '  -ngl, --n-gpu-layers <n>' ;;\n"
        << "  *) printf 'Available devices:\\n  X0: \\033[31mred\\377 (100 MiB, 50 MiB free)\\n' "
           ";;\n"
        << "esac\n";
    fs::permissions(engine_ / "llama-bench", fs::perms::owner_all);
    env_ = {{"XDG_CACHE_HOME", dir_.File("cache")}};
  }
  TempDir dir_;
  fs::path engine_;
  std::vector<std::pair<std::string, std::string>> env_;
};

TEST_F(HostileEngineTest, EngineTextHasNoControlBytes) {
  auto r = RunCommand({MoetuneBinary(), "engine", "--llama-dir", engine_.string()}, 60, env_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(HasControlBytes(r.out)) << r.out;
  EXPECT_FALSE(HasControlBytes(r.err)) << r.err;
  EXPECT_TRUE(IsValidUtf8(r.out));
  EXPECT_NE(r.out.find("\\x1b[2J"), std::string::npos) << "shown visibly: " << r.out;
}

TEST_F(HostileEngineTest, EngineJsonIsValidAndSaysSo) {
  auto r =
      RunCommand({MoetuneBinary(), "engine", "--json", "--llama-dir", engine_.string()}, 60, env_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(IsValidUtf8(r.out));
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["build_number"], 7);
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace moetune::itest
