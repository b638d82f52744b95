#include "util/text.h"

#include <gtest/gtest.h>

#include <string>

namespace moetune {
namespace {

TEST(TextTest, TrimAndLines) {
  EXPECT_EQ(Trim("  a b\t\r\n"), "a b");
  EXPECT_EQ(Trim(" \t "), "");
  EXPECT_EQ(SplitLines("a\r\nb\n\nc"), (std::vector<std::string_view>{"a", "b", "", "c"}));
  EXPECT_TRUE(SplitLines("").empty());
  std::string_view rest = "  one two\tthree ";
  EXPECT_EQ(NextWord(&rest), "one");
  EXPECT_EQ(NextWord(&rest), "two");
  EXPECT_EQ(NextWord(&rest), "three");
  EXPECT_EQ(NextWord(&rest), "");
}

TEST(TextTest, IntegersAreRangeChecked) {
  EXPECT_EQ(ParseInt64("-12"), -12);
  EXPECT_EQ(ParseInt64("9223372036854775807"), INT64_MAX);
  EXPECT_FALSE(ParseInt64("9223372036854775808"));  // one past the end: no exception, no wrap
  EXPECT_FALSE(ParseInt64(std::string(400, '9')));
  EXPECT_FALSE(ParseInt64("12x"));
  EXPECT_FALSE(ParseInt64(" 12"));
  EXPECT_FALSE(ParseInt64(""));
  EXPECT_FALSE(ParseUint64("-1"));
  EXPECT_EQ(ParseUint64("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(ParseIntInRange("256", 1, 256), 256);
  EXPECT_FALSE(ParseIntInRange("257", 1, 256));
  EXPECT_EQ(LeadingDigits("11669, commit"), "11669");
  EXPECT_TRUE(AllDigits("007"));
  EXPECT_FALSE(AllDigits("0x7"));
}

TEST(TextTest, DoublesAreFinite) {
  EXPECT_EQ(ParseDouble("1.5"), 1.5);
  EXPECT_EQ(ParseDouble("3e2"), 300.0);
  EXPECT_FALSE(ParseDouble("1e400"));  // overflow is refused, not infinity
  EXPECT_FALSE(ParseDouble("inf"));
  EXPECT_FALSE(ParseDouble("nan"));
  EXPECT_FALSE(ParseDouble("0x10"));
  EXPECT_FALSE(ParseDouble(std::string(400, '9') + "x"));
  EXPECT_FALSE(ParseDouble(std::string(400, '9')));  // a 400-digit value: out of range
}

TEST(TextTest, TruncateKeepsUtf8Whole) {
  EXPECT_EQ(Truncate("abc", 5), "abc");
  EXPECT_EQ(Truncate("abcdef", 3), "abc...");
  EXPECT_EQ(Truncate("a\xc3\xa9z", 2), "a...");  // never half of "é"
  EXPECT_EQ(AsciiLower("CUDA0 Host"), "cuda0 host");
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

TEST(SplitList, KeepsEveryItemAsWritten) {
  EXPECT_EQ(SplitList("24GiB,12GiB", ','), (std::vector<std::string>{"24GiB", "12GiB"}));
  EXPECT_EQ(SplitList("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(SplitList("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(SplitList("x,", ','), (std::vector<std::string>{"x", ""}));
}

}  // namespace
}  // namespace moetune
