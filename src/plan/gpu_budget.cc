#include "plan/gpu_budget.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/units.h"

namespace moetune {
namespace {

// The total and what others hold, from the first GPU of the doctor's profile.
void FromProfile(const GpuBudgetDefaults& d, GpuMemoryBudget* b) {
  const std::string when =
      fmt::format("measured by moetune doctor at {}{}", d.profile->created_at,
                  d.profile_path.empty() ? "" : fmt::format(" ({})", d.profile_path));
  if (d.profile->gpus.empty()) {
    b->total_from = "no GPU in the machine profile, " + when;
    return;
  }
  const GpuInfo& g = d.profile->gpus.front();
  b->total = g.total_bytes;
  b->total_from = fmt::format("{}, {}", g.name, when);
  // What the driver reserves counts as held: it is not free for llama.cpp.
  b->used = std::max<int64_t>(0, g.total_bytes - g.free_bytes);
  b->used_from = when;
}

}  // namespace

Result<GpuMemoryBudget> ResolveGpuBudget(const GpuBudgetFlags& f, const GpuBudgetDefaults& d) {
  GpuMemoryBudget b;
  b.used_from = "assumed: nothing else on the GPU (--vram-used SIZE says otherwise)";
  b.reserve_from = "nothing kept free (--reserve SIZE keeps room for programs that start later)";
  if (f.vram) {
    b.total = *f.vram;
    b.total_from = "--vram";
  } else if (d.what_if_total) {
    b.total = *d.what_if_total;
    b.total_from = d.what_if_from;
    if (d.what_if_used > 0) {
      b.used = d.what_if_used;
      b.used_from = d.what_if_used_from;
    }
  } else if (d.profile != nullptr) {
    FromProfile(d, &b);
  } else if (d.engine_has_gpu == false) {
    b.total_from = "the engine lists no GPU device";
  } else {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("no --vram given and no machine profile ({}): pass --vram SIZE (the "
                             "GPU's total memory, e.g. --vram 12GiB; --vram 0 for no GPU), a "
                             "what-if --machine, or run `moetune doctor` to measure this machine",
                             d.profile_error.empty() ? d.profile_path : d.profile_error));
  }
  if (f.vram_used) {
    b.used = *f.vram_used;
    b.used_from = "--vram-used";
  }
  if (f.reserve) {
    b.reserve = *f.reserve;
    b.reserve_from = "--reserve";
  }
  if (!b.has_gpu()) {
    b.used = b.reserve = 0;  // nothing to hold or keep on a GPU that is not there
    return b;
  }
  if (b.used > b.total) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("--vram-used {} is more than the GPU's total memory {} ({}); "
                    "--vram is the total, --vram-used what other programs hold",
                    FormatBytes(Bytes(b.used)), FormatBytes(Bytes(b.total)), b.total_from));
  }
  if (b.reserve > b.free()) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("--reserve {} is more than the free GPU memory {} ({} total less {} "
                             "held by other programs); give a smaller --reserve or the right "
                             "--vram / --vram-used",
                             FormatBytes(Bytes(b.reserve)), FormatBytes(Bytes(b.free())),
                             FormatBytes(Bytes(b.total)), FormatBytes(Bytes(b.used))));
  }
  return b;
}

std::string GpuBudgetText(const GpuMemoryBudget& b) {
  if (!b.has_gpu())
    return fmt::format("GPU memory: none ({})",
                       b.total_from == "--vram" ? "--vram 0" : b.total_from);
  return fmt::format(
      "GPU budget {} = {} total ({}) - {} held by other programs ({}) - {} kept free ({})",
      FormatBytes(Bytes(b.budget())), FormatBytes(Bytes(b.total)), b.total_from,
      FormatBytes(Bytes(b.used)), b.used_from, FormatBytes(Bytes(b.reserve)), b.reserve_from);
}

}  // namespace moetune
