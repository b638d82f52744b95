#include "util/utf8.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(Utf8Test, ValidUtf8IsRecognised) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("Qwen3 \xE2\x80\x94 \xF0\x9F\x98\x80"));  // em dash, emoji
  EXPECT_FALSE(IsValidUtf8("bad \xff byte"));
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x80"));          // truncated
}

TEST(Utf8Test, InvalidBytesBecomeReplacementCharacters) {
  bool replaced = false;
  EXPECT_EQ(ToValidUtf8("a\xff"
                        "b",
                        &replaced),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_TRUE(replaced);
  EXPECT_EQ(ToValidUtf8("ok \xE2\x80\x94", &replaced), "ok \xE2\x80\x94");
  EXPECT_FALSE(replaced);
}

TEST(Utf8Test, TerminalNeverGetsControlBytes) {
  const std::string hostile =
      "name\x1b[2J\rx\x07\x7f\xC2\x9B"
      "31m\n\tend\xff";
  const std::string shown = ForTerminal(hostile);
  for (unsigned char c : shown) {
    EXPECT_TRUE(c >= 0x20 || c == '\n' || c == '\t') << static_cast<int>(c);
    EXPECT_NE(c, 0x7f);
  }
  EXPECT_NE(shown.find("\\x1b[2J"), std::string::npos) << shown;
  EXPECT_NE(shown.find("\\u009b"), std::string::npos) << shown;
  EXPECT_TRUE(IsValidUtf8(shown));
  EXPECT_NE(shown.find("\n\tend"), std::string::npos);
}

TEST(Utf8Test, BidiControlsAndLineSeparatorsAreShownNotObeyed) {
  // U+202E (right-to-left override), U+2066 (LRI), U+200F (RLM), U+2028, U+2029, U+0085 (NEL).
  const std::string hostile =
      "a\xE2\x80\xAE"
      "exe.txt b\xE2\x81\xA6 c\xE2\x80\x8F d\xE2\x80\xA8 e\xE2\x80\xA9 f\xC2\x85";
  for (const std::string& shown : {ForTerminal(hostile), ForTerminalField(hostile)}) {
    EXPECT_EQ(shown.find("\xE2\x80\xAE"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("\xE2\x80\xA8"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("\xE2\x80\xA9"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("\xE2\x81\xA6"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("\xE2\x80\x8F"), std::string::npos) << shown;
    EXPECT_EQ(shown.find("\xC2\x85"), std::string::npos) << shown;
    EXPECT_NE(shown.find("a\\u202eexe.txt"), std::string::npos) << shown;
    EXPECT_NE(shown.find("\\u2028"), std::string::npos) << shown;
    EXPECT_NE(shown.find("\\u0085"), std::string::npos) << shown;
  }
  // Other non-ASCII text (an em dash, CJK) passes unchanged.
  const std::string name = "Qwen3 \xE2\x80\x94 30B \xE6\xA8\xA1\xE5\x9E\x8B";
  EXPECT_EQ(ForTerminalField(name), name);
}

TEST(Utf8Test, AFieldNeverStartsALineOfItsOwn) {
  const std::string name = "tiny\nllama-server -m /etc/passwd\r\n\tx";
  const std::string shown = ForTerminalField(name);
  EXPECT_EQ(shown.find('\n'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\r'), std::string::npos) << shown;
  EXPECT_EQ(shown.find('\t'), std::string::npos) << shown;
  EXPECT_EQ(shown, "tiny\\nllama-server -m /etc/passwd\\x0d\\n\\x09x");
  // The whole-text form keeps the text's own lines.
  EXPECT_EQ(ForTerminal("a\nb\tc"), "a\nb\tc");
}

TEST(Utf8Test, JsonWithInvalidUtf8IsStillJson) {
  nlohmann::json j = {{"name", std::string("bad\xff\xfe name")}, {"n", 1}};
  bool replaced = false;
  const std::string text = DumpJson(j, 2, &replaced);
  EXPECT_TRUE(replaced);
  EXPECT_TRUE(IsValidUtf8(text));
  auto back = nlohmann::json::parse(text);
  EXPECT_EQ(back["n"], 1);
  EXPECT_NE(back["name"].get<std::string>().find("\xEF\xBF\xBD"), std::string::npos);
  const std::string ok = DumpJson({{"name", "fine"}}, -1, &replaced);
  EXPECT_FALSE(replaced);
  EXPECT_EQ(ok, R"({"name":"fine"})");
}

TEST(Utf8Test, JsonEscapesControlCharacters) {
  const std::string text = DumpJson({{"name", "x\x1b[2J"}});
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_NE(text.find("\\u001b"), std::string::npos);
}

}  // namespace
}  // namespace moetune
