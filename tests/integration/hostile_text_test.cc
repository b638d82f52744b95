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

}  // namespace
}  // namespace moetune::itest
