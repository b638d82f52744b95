#include "report/sparkline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace moetune {
namespace {

TEST(Sparkline, ScalesBetweenMinAndMax) {
  EXPECT_EQ(Sparkline({1.0, 2.0, 8.0}, Glyphs::kUnicode), "▁▂█");
  EXPECT_EQ(Sparkline({1.0, 2.0, 8.0}, Glyphs::kAscii), "_.@");
  // From zero: the smallest value is not the floor.
  EXPECT_EQ(Sparkline({4.0, 8.0}, Glyphs::kUnicode, true), "▅█");
  EXPECT_EQ(Sparkline({}, Glyphs::kUnicode), "");
}

TEST(Sparkline, CliffShapeIsVisible) {
  // The cliff fixture's prefill: three slow points, then the fast plateau.
  const std::vector<std::optional<double>> pp = {94.7,  110.1, 130.2, 637.7, 627.0,
                                                 615.9, 585.3, 546.6, 515.2};
  EXPECT_EQ(Sparkline(pp, Glyphs::kUnicode), "▁▁▁███▇▇▆");
  EXPECT_EQ(Sparkline(pp, Glyphs::kAscii), "___@@@##*");
}

TEST(Sparkline, MissingAndNonFiniteValuesAreMarked) {
  EXPECT_EQ(Sparkline({std::nullopt, 1.0, std::nan(""), 3.0}, Glyphs::kUnicode), "×▁×█");
  EXPECT_EQ(Sparkline({std::nullopt, 1.0}, Glyphs::kAscii), "x+");
  // A flat series sits in the middle.
  EXPECT_EQ(Sparkline({5.0, 5.0}, Glyphs::kAscii), "++");
}

TEST(Sparkline, SaysWhenItsScaleDoesNotStartAtZero) {
  // Decode of 30.1-31.4 t/s drawn from its minimum looks like a steep curve:
  // the note says where the scale starts.
  const std::vector<std::optional<double>> tg = {30.1, 31.4, std::nullopt, 30.8};
  EXPECT_EQ(SparklineScaleNote(tg), "(scale from 30.1, not from 0)");
  EXPECT_EQ(SparklineScaleNote({412.3, 637.7}), "(scale from 412, not from 0)");
  // From zero, or with a floor at zero, or flat: nothing to say.
  EXPECT_EQ(SparklineScaleNote(tg, true), "");
  EXPECT_EQ(SparklineScaleNote({0.0, 5.0}), "");
  EXPECT_EQ(SparklineScaleNote({5.0, 5.0}), "");
  EXPECT_EQ(SparklineScaleNote({}), "");
}

TEST(HorizontalBar, EighthsAndPadding) {
  EXPECT_EQ(HorizontalBar(1.0, 4, Glyphs::kUnicode), "████");
  EXPECT_EQ(HorizontalBar(0.5, 4, Glyphs::kUnicode), "██  ");
  EXPECT_EQ(HorizontalBar(0.5625, 4, Glyphs::kUnicode), "██▎ ");
  EXPECT_EQ(HorizontalBar(0.5, 4, Glyphs::kAscii), "##  ");
  EXPECT_EQ(HorizontalBar(2.0, 3, Glyphs::kAscii), "###");
  EXPECT_EQ(HorizontalBar(-1, 3, Glyphs::kAscii), "   ");
  EXPECT_EQ(HorizontalBar(std::nan(""), 2, Glyphs::kUnicode), "  ");
  EXPECT_EQ(HorizontalBar(0.5, 0, Glyphs::kUnicode), "");
}

TEST(LocaleIsUtf8, PosixPrecedence) {
  auto env = [](const std::map<std::string, std::string>& vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_TRUE(LocaleIsUtf8(env({{"LANG", "en_US.UTF-8"}})));
  EXPECT_TRUE(LocaleIsUtf8(env({{"LANG", "C.utf8"}})));
  EXPECT_TRUE(LocaleIsUtf8(env({{"LC_CTYPE", "de_DE.utf-8@euro"}, {"LANG", "C"}})));
  EXPECT_FALSE(LocaleIsUtf8(env({})));
  EXPECT_FALSE(LocaleIsUtf8(env({{"LANG", "C"}})));
  EXPECT_FALSE(LocaleIsUtf8(env({{"LANG", "en_US.ISO-8859-1"}})));
  // LC_ALL wins over LANG; an empty LC_ALL does not count.
  EXPECT_FALSE(LocaleIsUtf8(env({{"LC_ALL", "POSIX"}, {"LANG", "en_US.UTF-8"}})));
  EXPECT_TRUE(LocaleIsUtf8(env({{"LC_ALL", ""}, {"LANG", "en_US.UTF-8"}})));
  EXPECT_EQ(TerminalGlyphs(true), Glyphs::kAscii);
}

}  // namespace
}  // namespace moetune
