// The interval arithmetic of live sampling, on scrapes shaped like the
// installed build's answers (tests/fixtures/watch/slots-*-b11669.json).
#include "watch/sampler.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

Scrape At(double t, double pt, double ps, double gt, double gs,
          std::optional<std::vector<SlotState>> slots, double processing = 0) {
  Scrape s;
  s.time_s = t;
  s.metrics.prompt_tokens_total = pt;
  s.metrics.prompt_seconds_total = ps;
  s.metrics.tokens_predicted_total = gt;
  s.metrics.tokens_predicted_seconds_total = gs;
  s.metrics.requests_processing = processing;
  s.slots = std::move(slots);
  return s;
}

SlotState Slot(int64_t task, bool busy, std::optional<int64_t> depth, int64_t decoded = 0,
               int id = 0) {
  SlotState s;
  s.id = id;
  s.id_task = task;
  s.is_processing = busy;
  s.depth = depth;
  s.n_decoded = decoded;
  return s;
}

TEST(SamplerTest, ARequestThatEndedInTheInterval) {
  // Idle before; the request (cache 733, 678 new tokens, 24 generated) ended.
  const Scrape a = At(0, 710, 1.639, 16, 0.09, std::vector<SlotState>{Slot(0, false, 725)});
  const Scrape b = At(5, 1388, 4.199, 40, 0.25, std::vector<SlotState>{Slot(17, false, 1434)});
  const Observation o = DeriveObservation(a, b);
  ASSERT_TRUE(o.prefill && o.decode);
  EXPECT_DOUBLE_EQ(o.prefill->tokens, 678);
  EXPECT_NEAR(o.prefill->rate(), 678 / 2.56, 1e-9);
  EXPECT_DOUBLE_EQ(*o.prefill->depth, 1434 - 23 - 339);  // prefill ended at 1411
  EXPECT_DOUBLE_EQ(*o.decode->depth, 1434 - 12);
  EXPECT_FALSE(o.concurrent);
}

TEST(SamplerTest, APrefillThatEndedWhileTheRequestStillGenerates) {
  const Scrape a = At(0, 0, 0, 0, 0, std::vector<SlotState>{Slot(0, true, 2048, 0)}, 1);
  const Scrape b = At(1, 302, 1.2, 0, 0, std::vector<SlotState>{Slot(0, true, 628, 327)}, 1);
  const Observation o = DeriveObservation(a, b);
  ASSERT_TRUE(o.prefill);
  EXPECT_FALSE(o.decode);
  EXPECT_DOUBLE_EQ(*o.prefill->depth, 302 - 151);
}

TEST(SamplerTest, AnAmbiguousIntervalHasNoDepth) {
  // The running request was already generating at the previous scrape, yet
  // prefill grew: another request came and went in between. No guess.
  const Scrape a = At(0, 100, 1, 10, 1, std::vector<SlotState>{Slot(5, true, 500, 20)}, 1);
  const Scrape b = At(1, 300, 2, 10, 1, std::vector<SlotState>{Slot(5, true, 520, 40)}, 1);
  const Observation o = DeriveObservation(a, b);
  ASSERT_TRUE(o.prefill);
  EXPECT_FALSE(o.prefill->depth.has_value());
}

TEST(SamplerTest, SeveralBusySlotsAreConcurrent) {
  const Scrape a = At(0, 0, 0, 0, 0,
                      std::vector<SlotState>{Slot(1, true, 10, 0, 0), Slot(2, true, 10, 0, 1)}, 2);
  const Scrape b = At(1, 700, 2, 64, 1,
                      std::vector<SlotState>{Slot(1, false, 400, 0, 0), Slot(2, true, 350, 3, 1)});
  const Observation o = DeriveObservation(a, b);
  EXPECT_TRUE(o.concurrent);
  EXPECT_FALSE(o.prefill->depth.has_value());
}

TEST(SamplerTest, NoSlotsEndpointMeansNoDepth) {
  const Observation o =
      DeriveObservation(At(0, 0, 0, 0, 0, std::nullopt), At(1, 500, 1, 50, 1, std::nullopt));
  ASSERT_TRUE(o.prefill && o.decode);
  EXPECT_FALSE(o.prefill->depth.has_value());
  EXPECT_FALSE(o.decode->depth.has_value());
}

TEST(SamplerTest, AnIdleIntervalIsEmpty) {
  const auto slots = std::vector<SlotState>{Slot(3, false, 900)};
  const Observation o = DeriveObservation(At(0, 5, 1, 5, 1, slots), At(5, 5, 1, 5, 1, slots));
  EXPECT_FALSE(o.prefill);
  EXPECT_FALSE(o.decode);
}

}  // namespace
}  // namespace moetune
