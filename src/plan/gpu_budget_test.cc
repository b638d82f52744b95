#include "plan/gpu_budget.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kMiB = int64_t{1} << 20;

MachineProfile ProfileWithGpu(int64_t total, int64_t free) {
  MachineProfile p;
  p.created_at = "2026-12-02T10:00:00Z";
  GpuInfo g;
  g.name = "NVIDIA GeForce RTX 3060";
  g.total_bytes = total;
  g.free_bytes = free;
  p.gpus.push_back(g);
  return p;
}

// One model, whichever way the machine is described: a preset's total with
// --vram-used gives the same budget as --vram with --vram-used, and --reserve
// comes off once, on top of what others hold (never twice).
TEST(GpuBudget, TheSameMachineDescribedTwoWaysGivesOneBudget) {
  GpuBudgetDefaults preset;
  preset.what_if_total = 12 * kGiB;
  preset.what_if_from = "--machine rtx3060-12g";
  preset.what_if_used = 860 * kMiB;  // the preset's idle-desktop assumption
  preset.what_if_used_from = "assumed for an idle desktop";
  GpuBudgetFlags f;
  f.vram_used = 1700 * kMiB;
  f.reserve = 1536 * kMiB;
  auto a = ResolveGpuBudget(f, preset);
  ASSERT_TRUE(a.ok()) << a.error().message();
  f.vram = 12 * kGiB;
  auto b = ResolveGpuBudget(f, GpuBudgetDefaults{});
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(a->budget(), b->budget());
  EXPECT_EQ(a->budget(), 12 * kGiB - 1700 * kMiB - 1536 * kMiB);
  EXPECT_EQ(a->used_from, "--vram-used");  // replaces the preset's assumption, not added
  EXPECT_EQ(a->total_from, "--machine rtx3060-12g");
  EXPECT_EQ(b->total_from, "--vram");

  // Without --vram-used the preset's assumption stands and is named.
  auto c = ResolveGpuBudget(GpuBudgetFlags{}, preset);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->free(), 12 * kGiB - 860 * kMiB);
  EXPECT_EQ(c->used_from, "assumed for an idle desktop");
  // --vram alone assumes nothing held, and says so.
  GpuBudgetFlags only_vram;
  only_vram.vram = 12 * kGiB;
  auto d = ResolveGpuBudget(only_vram, preset);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->used, 0);
  EXPECT_NE(d->used_from.find("--vram-used SIZE says otherwise"), std::string::npos);
}

TEST(GpuBudget, TheTextSaysEveryFigureAndItsSource) {
  GpuBudgetFlags f;
  f.vram = 12 * kGiB;
  f.vram_used = 1 * kGiB;
  f.reserve = 512 * kMiB;
  auto b = ResolveGpuBudget(f, GpuBudgetDefaults{});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(GpuBudgetText(*b),
            "GPU budget 10.50 GiB = 12.00 GiB total (--vram) - 1.00 GiB held by other programs "
            "(--vram-used) - 512.0 MiB kept free (--reserve)");
  GpuBudgetFlags none;
  none.vram = 0;
  auto z = ResolveGpuBudget(none, GpuBudgetDefaults{});
  ASSERT_TRUE(z.ok());
  EXPECT_FALSE(z->has_gpu());
  EXPECT_EQ(GpuBudgetText(*z), "GPU memory: none (--vram 0)");
}

TEST(GpuBudget, TheProfileGivesTheTotalAndWhatOthersHold) {
  const MachineProfile p = ProfileWithGpu(12 * kGiB, 11 * kGiB);
  GpuBudgetDefaults d;
  d.profile = &p;
  d.profile_path = "/home/u/.config/moetune/machine.json";
  auto b = ResolveGpuBudget(GpuBudgetFlags{}, d);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->total, 12 * kGiB);
  EXPECT_EQ(b->used, 1 * kGiB);
  EXPECT_NE(b->total_from.find("RTX 3060"), std::string::npos);
  EXPECT_NE(b->used_from.find("measured by moetune doctor at 2026-12-02T10:00:00Z"),
            std::string::npos);
  // A profile that lists no GPU is no GPU; an engine without a device too.
  const MachineProfile none;
  d.profile = &none;
  auto n = ResolveGpuBudget(GpuBudgetFlags{}, d);
  ASSERT_TRUE(n.ok());
  EXPECT_FALSE(n->has_gpu());
  GpuBudgetDefaults engine_only;
  engine_only.engine_has_gpu = false;
  auto e = ResolveGpuBudget(GpuBudgetFlags{}, engine_only);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(GpuBudgetText(*e), "GPU memory: none (the engine lists no GPU device)");
}

TEST(GpuBudget, ImpossibleFiguresAreRefusedByName) {
  GpuBudgetDefaults nothing;
  nothing.profile_error = "cannot open /x/machine.json";
  auto missing = ResolveGpuBudget(GpuBudgetFlags{}, nothing);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("pass --vram SIZE (the GPU's total memory"),
            std::string::npos);
  EXPECT_NE(missing.error().message().find("cannot open /x/machine.json"), std::string::npos);
  // An engine with a GPU does not make up a figure either.
  nothing.engine_has_gpu = true;
  EXPECT_FALSE(ResolveGpuBudget(GpuBudgetFlags{}, nothing).ok());

  GpuBudgetFlags f;
  f.vram = 8 * kGiB;
  f.vram_used = 9 * kGiB;
  auto used = ResolveGpuBudget(f, GpuBudgetDefaults{});
  ASSERT_FALSE(used.ok());
  EXPECT_NE(used.error().message().find("--vram-used 9.00 GiB is more than the GPU's total"),
            std::string::npos)
      << used.error().message();
  f.vram_used = 2 * kGiB;
  f.reserve = 7 * kGiB;
  auto reserve = ResolveGpuBudget(f, GpuBudgetDefaults{});
  ASSERT_FALSE(reserve.ok());
  EXPECT_NE(reserve.error().message().find("--reserve 7.00 GiB is more than the free GPU memory "
                                           "6.00 GiB"),
            std::string::npos)
      << reserve.error().message();
}

}  // namespace
}  // namespace moetune
