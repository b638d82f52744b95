#include "util/units.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(ParseBytes, AcceptsCommonForms) {
  EXPECT_EQ(ParseBytes("12GiB")->count(), 12LL << 30);
  EXPECT_EQ(ParseBytes("11500MiB")->count(), 11500LL << 20);
  EXPECT_EQ(ParseBytes("12G")->count(), 12LL << 30);
  EXPECT_EQ(ParseBytes(" 1.5 gb ")->count(), 3LL << 29);
  EXPECT_EQ(ParseBytes("4096")->count(), 4096);
  EXPECT_EQ(ParseBytes("512K")->count(), 512 * 1024);
}

TEST(ParseBytes, RejectsGarbageWithHelpfulMessage) {
  auto r = ParseBytes("twelve");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("12GiB"), std::string::npos);
  EXPECT_FALSE(ParseBytes("12XB").ok());
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("1e30").ok());
}

TEST(FormatBytes, PicksUnit) {
  EXPECT_EQ(FormatBytes(Bytes::GiB(1.5)), "1.50 GiB");
  EXPECT_EQ(FormatBytes(Bytes::MiB(512)), "512.0 MiB");
  EXPECT_EQ(FormatBytes(Bytes(17)), "17 B");
  EXPECT_EQ(FormatBytes(Bytes::MiB(-2)), "-2.0 MiB");
}

TEST(ParseTokenCount, Works) {
  EXPECT_EQ(*ParseTokenCount("32K"), 32768);
  EXPECT_EQ(*ParseTokenCount("4096"), 4096);
  EXPECT_FALSE(ParseTokenCount("0").ok());
  EXPECT_FALSE(ParseTokenCount("abc").ok());
}

}  // namespace
}  // namespace moetune
