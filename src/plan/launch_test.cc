#include "plan/launch.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

LaunchConfig Config() {
  LaunchConfig c;
  c.moe = true;
  c.placement.has_device = true;
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 7;
  c.placement.override_layer = 6;
  c.placement.override_kinds = {"ffn_down_exps"};
  c.ctx.n_ctx = 32768;
  c.ctx.n_seq = 4;
  c.ctx.kv_unified = true;
  c.ctx.n_ubatch = 1024;
  c.ctx.n_batch = 4096;
  c.ctx.flash_attn = true;
  c.ctx.type_k = ggml_type::kQ8_0;
  c.ctx.type_v = ggml_type::kQ8_0;
  return c;
}

TEST(MemoryShapingFlags, CarryEveryMemoryShapingSetting) {
  EXPECT_EQ(ShellJoin(MemoryShapingFlags(Config())),
            "-ngl 99 --n-cpu-moe 7 -ot 'blk\\.6\\.(ffn_down_exps)=CPU' -c 32768 -np 4 -kvu "
            "-ub 1024 -b 4096 -fa on -ctk q8_0 -ctv q8_0");
  LaunchConfig one = Config();
  one.ctx.n_seq = 1;  // one slot: unified or not is the same cache; -np stays explicit
  const auto f = MemoryShapingFlags(one);
  EXPECT_EQ(std::count(f.begin(), f.end(), "-kvu"), 0);
  EXPECT_NE(std::find(f.begin(), f.end(), "-np"), f.end());
}

// The command plan prints and the dry run plan --check runs come from one
// source: the server's argument vector is exactly the tool, the model, the
// memory-shaping flags and -fit off.
TEST(ServerArgs, AreTheMemoryShapingFlagsAndNothingElse) {
  const LaunchConfig c = Config();
  const auto args = ServerArgs("/models/my model.gguf", c);
  const auto flags = MemoryShapingFlags(c);
  ASSERT_EQ(args.size(), flags.size() + 5);
  EXPECT_EQ(args[0], "llama-server");
  EXPECT_EQ(args[2], "/models/my model.gguf");
  EXPECT_TRUE(std::equal(flags.begin(), flags.end(), args.begin() + 3));
  EXPECT_EQ(args[args.size() - 2], "-fit");
  EXPECT_EQ(args.back(), "off");
}

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
