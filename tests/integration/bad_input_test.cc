// Integration: every kind of bad model file makes `moetune inspect` and
// `moetune plan` exit with status 1 and a message naming the problem; never a
// crash (signal), a hang, or a partial output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "support.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void WriteFile(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    good_ = dir_.File("good.gguf");
    auto r = RunCommand({MoetuneBinary(), "synth", "--preset", "qwen3moe", "-o", good_}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    bytes_ = ReadFile(good_);
    ASSERT_GT(bytes_.size(), 4096u);
  }

  // Runs inspect and plan on `path`; both must fail cleanly with `needle` in stderr.
  void ExpectCleanFailure(const std::string& path, const std::string& needle) {
    for (const auto& cmd : std::vector<std::vector<std::string>>{
             {MoetuneBinary(), "inspect", path},
             {MoetuneBinary(), "plan", path, "--vram", "8GiB", "-o", dir_.File("plan.txt")}}) {
      auto r = RunCommand(cmd, 60);
      SCOPED_TRACE(cmd[1] + " " + path);
      EXPECT_FALSE(r.timed_out);
      EXPECT_EQ(r.exit_code, 1) << "exit " << r.exit_code << " (>128 = killed by a signal)\n"
                                << r.err;
      EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(needle), std::string::npos)
          << "expected '" << needle << "' in: " << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out.substr(0, 200);
      EXPECT_FALSE(fs::exists(dir_.File("plan.txt"))) << "no output file on failure";
    }
  }

  TempDir dir_;
  std::string good_;
  std::string bytes_;
};

TEST_F(BadInputTest, MissingFile) { ExpectCleanFailure(dir_.File("nope.gguf"), "nope.gguf"); }

TEST_F(BadInputTest, Directory) { ExpectCleanFailure(dir_.path().string(), dir_.path().string()); }

TEST_F(BadInputTest, EmptyFile) {
  WriteFile(dir_.File("empty.gguf"), "");
  ExpectCleanFailure(dir_.File("empty.gguf"), "empty.gguf");
}

TEST_F(BadInputTest, NotAGguf) {
  WriteFile(dir_.File("text.gguf"), "this is a text file, not a model\n");
  ExpectCleanFailure(dir_.File("text.gguf"), "GGUF");
}

TEST_F(BadInputTest, TruncatedHeader) {
  WriteFile(dir_.File("trunc.gguf"), bytes_.substr(0, 1000));
  ExpectCleanFailure(dir_.File("trunc.gguf"), "offset");
}

TEST_F(BadInputTest, TruncatedTensorData) {
  // Header intact, data cut short: tensors point past the end of the file.
  WriteFile(dir_.File("short.gguf"), bytes_.substr(0, bytes_.size() / 2));
  ExpectCleanFailure(dir_.File("short.gguf"), "tensor");
}

TEST_F(BadInputTest, UnsupportedVersion) {
  std::string b = bytes_;
  b[4] = 9;  // version 9
  WriteFile(dir_.File("v9.gguf"), b);
  ExpectCleanFailure(dir_.File("v9.gguf"), "version");
}

TEST_F(BadInputTest, RandomGarbageAfterMagicNeverCrashes) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 20; ++i) {
    std::string b = bytes_.substr(0, 4096);
    for (size_t k = 8; k < b.size(); ++k) {
      if (rng() % 16 == 0) b[k] = static_cast<char>(rng());
    }
    const std::string p = dir_.File("garbage" + std::to_string(i) + ".gguf");
    WriteFile(p, b);
    auto r = RunCommand({MoetuneBinary(), "inspect", p}, 60);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 1) << r.err;
  }
}

TEST_F(BadInputTest, BadSizesAndOptionsNameTheFix) {
  // Values the command line itself can refuse are a bad command line (exit 2).
  auto r = RunCommand({MoetuneBinary(), "plan", good_, "--vram", "twelve"}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("12GiB"), std::string::npos) << r.err;
  r = RunCommand({MoetuneBinary(), "plan", good_, "--vram", "8GiB", "--ctk", "q3_k"}, 60);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("q8_0"), std::string::npos) << r.err;
  r = RunCommand({MoetuneBinary(), "plan", good_, "--vram", "8GiB", "--fa", "off", "--ctv", "q8_0"},
                 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("flash attention"), std::string::npos) << r.err;
  r = RunCommand({MoetuneBinary(), "plan", good_, "--vram", "1GiB", "--reserve", "2GiB"}, 60);
  EXPECT_EQ(r.exit_code, 1);
  r = RunCommand({MoetuneBinary(), "inspect"}, 60);
  EXPECT_EQ(r.exit_code, 2) << "usage error";
}

}  // namespace
}  // namespace moetune::itest
