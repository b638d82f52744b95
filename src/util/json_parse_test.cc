#include "util/json_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace moetune {
namespace {

std::string Nested(int depth, char open = '[', char close = ']') {
  return std::string(static_cast<std::size_t>(depth), open) +
         std::string(static_cast<std::size_t>(depth), close);
}

TEST(JsonParseTest, ParsesOrdinaryJson) {
  auto j = ParseJson(R"({"a": [1, 2.5, "x]]]", {"b": null}], "c": true})", "test");
  ASSERT_TRUE(j.ok()) << j.error().message();
  EXPECT_EQ((*j)["a"][2], "x]]]");
  EXPECT_TRUE(ParseJson(Nested(128), "test").ok());
}

TEST(JsonParseTest, DeepNestingIsRefusedBeforeItCanCrash) {
  // 100,000 levels parse with nlohmann's iterative parser but crash the first
  // copy or dump (one stack frame per level).
  for (const std::string& text : {Nested(100000), Nested(129), "{\"a\":" + Nested(200) + "}",
                                  std::string(50000, '[') /* and unterminated */}) {
    auto j = ParseJson(text, "'deep.json'");
    ASSERT_FALSE(j.ok());
    EXPECT_NE(j.error().message().find("nested deeper than 128 levels"), std::string::npos)
        << j.error().message();
    EXPECT_NE(j.error().message().find("'deep.json'"), std::string::npos);
    EXPECT_TRUE(ParseJsonOrDiscarded(text).is_discarded());
  }
  // Brackets inside strings (with escaped quotes) do not count.
  const std::string in_string = "[\"" + std::string(1000, '[') + "\\\"" + "\"]";
  EXPECT_TRUE(ParseJson(in_string, "test").ok());
  // Objects count like arrays.
  std::string objects;
  for (int i = 0; i < 200; ++i) objects += "{\"k\":";
  objects += "1" + std::string(200, '}');
  EXPECT_FALSE(ParseJson(objects, "test").ok());
}

TEST(JsonParseTest, SizeAndValueCountAreBounded) {
  JsonLimits small;
  small.max_bytes = 100;
  auto big = ParseJson(std::string(200, ' ') + "1", "'x'", small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("bytes"), std::string::npos);
  JsonLimits few;
  few.max_values = 1000;
  std::string many = "[";
  for (int i = 0; i < 2000; ++i) many += i ? ",0" : "0";
  many += "]";
  auto m = ParseJson(many, "'x'", few);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("more than 1000 JSON values"), std::string::npos)
      << m.error().message();
  EXPECT_TRUE(ParseJson(many, "'x'").ok());
}

TEST(JsonParseTest, InvalidJsonSaysWhere) {
  auto j = ParseJson("{\"a\": 1,,}", "'bad.json'");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message().find("'bad.json': not valid JSON (at byte"), std::string::npos)
      << j.error().message();
}

}  // namespace
}  // namespace moetune
