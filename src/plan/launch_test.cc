#include "plan/launch.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(SlotContextText, SaysWhatEachSlotGets) {
  ContextParams cp;
  cp.n_ctx = 32768;
  cp.n_seq = 4;
  EXPECT_EQ(SlotContextText(cp), "4 slots x 8192 tokens, one cache per slot (no -kvu)");
  cp.kv_unified = true;
  EXPECT_EQ(SlotContextText(cp), "4 slots sharing one 32768-token cache (-kvu)");
  cp.n_seq = 1;
  EXPECT_EQ(SlotContextText(cp), "1 slot x 32768 tokens");
}

}  // namespace
}  // namespace moetune
