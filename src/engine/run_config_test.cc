#include "engine/run_config.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(ParseIntListTest, ListsAndRanges) {
  EXPECT_EQ(*ParseIntList("1,2,4"), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(*ParseIntList("1-4"), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(*ParseIntList("0-8+4"), (std::vector<int>{0, 4, 8}));
  EXPECT_EQ(*ParseIntList("1-16*2"), (std::vector<int>{1, 2, 4, 8, 16}));
  EXPECT_EQ(*ParseIntList("-1"), (std::vector<int>{-1}));
  EXPECT_EQ(*ParseIntList("99,0-2"), (std::vector<int>{99, 0, 1, 2}));
}

TEST(ParseIntListTest, BadItemsAreNamed) {
  auto r = ParseIntList("1,x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'x'"), std::string::npos);
  EXPECT_FALSE(ParseIntList("4-1").ok());
  EXPECT_FALSE(ParseIntList("1-8+0").ok());
  EXPECT_FALSE(ParseIntList("").ok());
  // Values past int wrapped: 9999999999 became 1410065407, 4294967297 became 1.
  for (const char* big : {"9999999999", "4294967297", "1,2147483648", "-2147483649"}) {
    auto w = ParseIntList(big);
    ASSERT_FALSE(w.ok()) << big;
    EXPECT_NE(w.error().message().find("too large"), std::string::npos) << w.error().message();
  }
  EXPECT_EQ(*ParseIntList("2147483647"), (std::vector<int>{2147483647}));
}

TEST(RunConfigTest, TestNamesAndKeys) {
  RunConfig c;
  c.n_prompt = 512;
  EXPECT_EQ(c.test_name(), "pp512");
  EXPECT_EQ(c.kind(), TestKind::kPrefill);
  c.n_gen = 128;
  c.n_depth = 4096;
  EXPECT_EQ(c.test_name(), "pp512+tg128 @ d4096");
  RunConfig d = c;
  d.threads = 7;
  EXPECT_EQ(c.ModelKey(), d.ModelKey());  // threads do not reload the model
  d.placement.n_cpu_moe = 3;
  EXPECT_NE(c.ModelKey(), d.ModelKey());
}

TEST(RunConfigTest, FlashAttnHasOneSpelling) {
  for (const char* v : {"on", "1", "true", "enabled"})
    EXPECT_EQ(ParseFlashAttn(v).value(), FlashAttn::kOn);
  for (const char* v : {"off", "0", "false", "disabled"}) {
    EXPECT_EQ(ParseFlashAttn(v).value(), FlashAttn::kOff);
  }
  for (const char* v : {"auto", "-1"}) EXPECT_EQ(ParseFlashAttn(v).value(), FlashAttn::kAuto);
  EXPECT_EQ(ParseFlashAttn("").value(), FlashAttn::kDefault);
  auto bad = ParseFlashAttn("ON");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'ON'"), std::string::npos);
  // "-fa 1" and "-fa on" are one setting: one context, one test.
  RunConfig a;
  a.flash_attn = *ParseFlashAttn("1");
  RunConfig b = a;
  b.flash_attn = *ParseFlashAttn("on");
  EXPECT_EQ(a.ContextKey(), b.ContextKey());
}

TEST(RunConfigTest, IsAServerConfigPlusTheTest) {
  RunConfig c;
  EXPECT_EQ(c.threads, 1);  // a measurement names its threads
  c.model = "m.gguf";
  c.ctx_size = 4096;
  c.n_parallel = 1;
  c.fit = Switch::kOff;
  c.placement.n_cpu_moe = -1;
  // What llama-bench takes of it: no context, slots or -fit; no --n-cpu-moe is 0.
  const ServerConfig part = BenchPart(c);
  EXPECT_EQ(part.ctx_size, 0);
  EXPECT_EQ(part.n_parallel, -1);
  EXPECT_EQ(part.fit, Switch::kDefault);
  EXPECT_EQ(part.placement.n_cpu_moe, 0);
  EXPECT_EQ(part.model, "m.gguf");
  EXPECT_EQ(part.threads, 1);
}

}  // namespace
}  // namespace moetune
