#include "watch/server_api.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <utility>

#include "watch/trace_test_util.h"

namespace moetune {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream f(testing::WatchFixture(name));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ServerApiTest, ParsesTheInstalledBuildsMetrics) {
  // Recorded from llama-server 0.7.0 (build 11669) after one request.
  auto m = ParseMetrics(Fixture("metrics-b11669.txt"));
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_DOUBLE_EQ(*m->prompt_tokens_total, 302);
  EXPECT_DOUBLE_EQ(*m->prompt_seconds_total, 1.22725);
  EXPECT_DOUBLE_EQ(*m->tokens_predicted_total, 400);
  EXPECT_DOUBLE_EQ(*m->tokens_predicted_seconds_total, 0.913178);
  EXPECT_DOUBLE_EQ(*m->requests_processing, 0);
  EXPECT_DOUBLE_EQ(*m->requests_deferred, 0);
  EXPECT_TRUE(m->n_decode_total.has_value());
  EXPECT_GT(m->all.size(), 10u);
}

TEST(ServerApiTest, MetricsWithLabelsTimestampsAndJunk) {
  auto m = ParseMetrics(
      "# HELP x\nllamacpp:prompt_tokens_total{slot=\"0\"} 10 1700000000\n"
      "llamacpp:prompt_seconds_total 2.5\r\nllamacpp:tokens_predicted_total 1e2\n"
      "llamacpp:tokens_predicted_seconds_total NaN\nllamacpp:tokens_predicted_seconds_total 4\n"
      "garbage line\nllamacpp:broken\nother_metric 5\n");
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_DOUBLE_EQ(*m->prompt_tokens_total, 10);
  EXPECT_DOUBLE_EQ(*m->prompt_seconds_total, 2.5);
  EXPECT_DOUBLE_EQ(*m->tokens_predicted_total, 100);
  EXPECT_DOUBLE_EQ(*m->tokens_predicted_seconds_total, 4);
  EXPECT_FALSE(m->requests_processing.has_value());
}

TEST(ServerApiTest, MetricsErrorsSayWhatIsMissing) {
  auto none = ParseMetrics("<html>hello</html>");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("not llama-server"), std::string::npos);
  auto partial = ParseMetrics("llamacpp:prompt_tokens_total 1\n");
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.error().message().find("llamacpp:tokens_predicted_seconds_total"),
            std::string::npos);
}

TEST(ServerApiTest, ParsesSlotsInEveryState) {
  auto unused = ParseSlots(Fixture("slots-unused-b11669.json"));
  ASSERT_TRUE(unused.ok());
  ASSERT_EQ(unused->size(), 1u);
  EXPECT_FALSE((*unused)[0].depth.has_value());
  EXPECT_EQ((*unused)[0].n_ctx, 4096);

  auto busy = ParseSlots(Fixture("slots-busy-b11669.json"));
  ASSERT_TRUE(busy.ok());
  EXPECT_TRUE((*busy)[0].is_processing);
  EXPECT_EQ((*busy)[0].depth, 2048);
  EXPECT_EQ((*busy)[0].n_decoded, 0);

  auto decoding = ParseSlots(Fixture("slots-decoding-b11669.json"));
  ASSERT_TRUE(decoding.ok());
  EXPECT_TRUE((*decoding)[0].is_processing);
  EXPECT_EQ((*decoding)[0].depth, 628);  // 302 prompt + 327 generated - 1
  EXPECT_EQ((*decoding)[0].n_decoded, 327);

  auto idle = ParseSlots(Fixture("slots-idle-b11669.json"));
  ASSERT_TRUE(idle.ok());
  EXPECT_FALSE((*idle)[0].is_processing);
  EXPECT_EQ((*idle)[0].depth, 701);
  EXPECT_EQ((*idle)[0].id_task, 0);
}

TEST(ServerApiTest, OlderSlotsUseNPast) {
  auto s = ParseSlots(R"([{"id":1,"n_past":77,"is_processing":true,"id_task":5},{"id":2},3])");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].depth, 77);
  EXPECT_EQ((*s)[1].id, 2);
  EXPECT_FALSE(ParseSlots("{}").ok());
  EXPECT_FALSE(ParseSlots("not json").ok());
}

TEST(ServerApiTest, ParsesProps) {
  auto p = ParseProps(Fixture("props-b11669.json"));
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->model_path, "tiny16k.gguf");
  EXPECT_EQ(p->n_ctx_per_slot, 4096);
  EXPECT_EQ(p->total_slots, 1);
  EXPECT_EQ(p->build_info, "b11669-Debian");
  EXPECT_EQ(p->endpoint_metrics, true);
  EXPECT_FALSE(ParseProps(R"({"hello":"world"})").ok());
  EXPECT_FALSE(ParseProps("[1,2]").ok());
}

TEST(ServerApiTest, ImpossiblePropsAreRefusedWithTheFieldNamed) {
  for (const char* body :
       {R"({"model_path":"m.gguf","total_slots":-3})",
        R"({"model_path":"m.gguf","total_slots":1e308})",
        R"({"model_path":"m.gguf","total_slots":1,"default_generation_settings":{"n_ctx":-1}})"}) {
    auto p = ParseProps(body);
    ASSERT_FALSE(p.ok()) << body;
    const bool named = p.error().message().find("total_slots") != std::string::npos ||
                       p.error().message().find("n_ctx") != std::string::npos;
    EXPECT_TRUE(named) << p.error().message();
  }
  auto ok = ParseProps(R"({"model_path":"m.gguf","total_slots":4})");
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(ok->total_slots, 4);
}

// The same endpoints of both recorded engines (tests/fixtures/engine): 0.4.0
// and 0.7.0 expose the same /metrics names and the same /slots and /props
// fields moetune reads; only the build in /props differs.
TEST(ServerApiTest, BothRecordedEnginesAnswerAlike) {
  const std::string root = std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/engine/";
  auto read = [&](const std::string& engine, const std::string& file) {
    std::ifstream f(root + engine + "/" + file);
    EXPECT_TRUE(f.good()) << engine << "/" << file;
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  for (const auto& [engine, build] : {std::pair{"debian-0.7.0-b11669", "b11669-Debian"},
                                      std::pair{"bundle-0.4.0-80fb11a", "b1-80fb11a"}}) {
    SCOPED_TRACE(engine);
    // After one request of 4 generated tokens.
    auto m = ParseMetrics(read(engine, "server-metrics.txt"));
    ASSERT_TRUE(m.ok()) << m.error().message();
    EXPECT_GT(*m->prompt_tokens_total, 0);
    EXPECT_GT(*m->prompt_seconds_total, 0);
    EXPECT_DOUBLE_EQ(*m->tokens_predicted_total, 4);
    EXPECT_GT(*m->tokens_predicted_seconds_total, 0);
    EXPECT_DOUBLE_EQ(*m->requests_processing, 0);
    EXPECT_EQ(m->all.size(), 15u);
    auto slots = ParseSlots(read(engine, "server-slots-idle.json"));
    ASSERT_TRUE(slots.ok()) << slots.error().message();
    ASSERT_EQ(slots->size(), 1u);
    EXPECT_EQ((*slots)[0].n_ctx, 512);
    EXPECT_FALSE((*slots)[0].is_processing);
    auto p = ParseProps(read(engine, "server-props.json"));
    ASSERT_TRUE(p.ok()) << p.error().message();
    EXPECT_EQ(p->build_info, build);
    EXPECT_EQ(p->n_ctx_per_slot, 512);
    EXPECT_EQ(p->total_slots, 1);
    EXPECT_EQ(p->endpoint_metrics, true);
  }
}

TEST(ServerApiTest, ErrorMessageOfA501) {
  EXPECT_EQ(ServerErrorMessage(R"({"error":{"code":501,"message":"Start it with `--metrics`"}})"),
            "Start it with `--metrics`");
  EXPECT_EQ(ServerErrorMessage("<html>"), "");
}

}  // namespace
}  // namespace moetune
