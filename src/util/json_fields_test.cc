#include "util/json_fields.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

using nlohmann::json;

TEST(JsonFields, ReadsTypedFieldsAndDefaults) {
  const json j = json::parse(R"({"n": 5, "f": 5.0, "x": 1.5, "s": "a", "b": true,
                                 "list": ["p", "q"], "nums": [1, 2.5], "o": {}, "nul": null})");
  JsonFields f(j, "top");
  EXPECT_EQ(f.Int("n", 0, 10), 5);
  EXPECT_EQ(f.Int("f", 0, 10), 5);  // an integral float is an integer
  EXPECT_DOUBLE_EQ(f.Number("x", 0, 2), 1.5);
  EXPECT_EQ(f.String("s"), "a");
  EXPECT_TRUE(f.Bool("b", false));
  EXPECT_EQ(f.Strings("list"), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(f.Numbers("nums", 0, 10), (std::vector<double>{1, 2.5}));
  EXPECT_NE(f.Object("o"), nullptr);
  EXPECT_EQ(f.Int("absent", 0, 10, 7), 7);
  EXPECT_EQ(f.Int("nul", 0, 10, 7), 7);  // null is absent
  EXPECT_FALSE(f.OptionalInt("absent", 0, 10).has_value());
  EXPECT_EQ(f.String("absent", "d"), "d");
  EXPECT_TRUE(f.ok()) << f.error().message();
}

TEST(JsonFields, TheFirstProblemNamesFieldValueAndRange) {
  const json j = json::parse(R"({"free_bytes": "lots", "n": -1})");
  JsonFields f(j, "gpus[0]");
  EXPECT_EQ(f.Int("free_bytes", 0, 100), 0);
  EXPECT_EQ(f.Int("n", 0, 100), 0);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind(), ErrorKind::kFormat);
  EXPECT_EQ(f.error().message(),
            "field 'gpus[0].free_bytes' is \"lots\"; expected a whole number from 0 to 100");
}

TEST(JsonFields, OutOfRangeValuesNeverReachAnInteger) {
  // A float beyond int64 converted to an integer is undefined behaviour;
  // an unsigned value above INT64_MAX would wrap.
  for (const char* text :
       {R"({"v": 1e300})", R"({"v": -1e300})", R"({"v": 1.5})", R"({"v": 9.223372036854775808e18})",
        R"({"v": 18446744073709551615})", R"({"v": true})", R"({"v": [1]})"}) {
    const json j = json::parse(text);
    JsonFields f(j, "");
    (void)f.Int("v", INT64_MIN, INT64_MAX);
    EXPECT_FALSE(f.ok()) << text;
  }
  for (const char* text : {R"({"v": "1"})", R"({"v": 1e400})", R"({"v": 11})"}) {
    const json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) continue;
    JsonFields f(j, "");
    (void)f.Number("v", 0, 10);
    EXPECT_FALSE(f.ok()) << text;
  }
}

TEST(JsonFields, MissingAndMistypedContainers) {
  const json j = json::parse(R"({"a": 1, "s": [1, "x"]})");
  JsonFields f(j, "");
  EXPECT_EQ(f.Array("missing"), nullptr);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("field 'missing' is missing; expected an array"),
            std::string::npos)
      << f.error().message();
  JsonFields g(j, "");
  EXPECT_EQ(g.OptionalObject("a"), nullptr);
  EXPECT_FALSE(g.ok());
  JsonFields h(j, "");
  EXPECT_TRUE(h.Strings("s").empty());
  EXPECT_FALSE(h.ok());
  const json array = json::array();
  JsonFields not_object(array, "profile");
  EXPECT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.Int("x", 0, 1, 0), 0);  // reads nothing, throws nothing
}

TEST(JsonFields, NestedErrorsAreMerged) {
  const json j = json::parse(R"({"pcie": {"gen_max": "four"}})");
  JsonFields f(j, "gpus[1]");
  JsonFields nested(*f.Object("pcie"), f.Path("pcie"));
  (void)nested.Int("gen_max", 0, 64, 0);
  f.Merge(nested);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("gpus[1].pcie.gen_max"), std::string::npos);
}

TEST(JsonFields, LongOrInvalidValuesAreShownShortAndValid) {
  json j = {{"s", std::string(1000, 'x')}, {"t", std::string("\xff\xfe")}};
  JsonFields f(j, "");
  (void)f.Int("s", 0, 1);
  ASSERT_FALSE(f.ok());
  EXPECT_LT(f.error().message().size(), 200u);
  JsonFields g(j, "");
  (void)g.Int("t", 0, 1);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message().find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

}  // namespace
}  // namespace moetune
