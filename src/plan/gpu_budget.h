#pragma once
/// GPU memory described one way, by every command that plans for a GPU (plan,
/// serve, tune, bench, calibrate): the card's total, what other programs hold
/// on it (the display, another model), what is free (total less that), and
/// what moetune keeps free beyond it for programs that will start later
/// (--reserve). The plan fills the budget = free - reserve, less its own
/// margin. Each figure says where it came from (a flag, the doctor's
/// measurement, a what-if preset, an assumption), and that is printed before
/// anything is planned.
///   --vram SIZE       the GPU's total memory (a what-if card, or this one)
///   --vram-used SIZE  memory other programs hold on it now
///   --reserve SIZE    memory to keep free beyond that
/// A what-if preset gives the card's total; nothing else is assumed held
/// unless --vram-used says so. On this machine, without --vram, the doctor's
/// profile gives the total and what others held when it was measured.

#include <cstdint>
#include <optional>
#include <string>

#include "hw/machine_profile.h"
#include "util/result.h"

namespace moetune {

/// The flags, in bytes (nullopt = not given).
struct GpuBudgetFlags {
  std::optional<int64_t> vram;       // --vram: total
  std::optional<int64_t> vram_used;  // --vram-used
  std::optional<int64_t> reserve;    // --reserve
};

struct GpuMemoryBudget {
  int64_t total = 0;                                // the card's memory; 0 = no GPU
  int64_t used = 0;                                 // held by other programs
  int64_t reserve = 0;                              // kept free beyond that for later programs
  std::string total_from, used_from, reserve_from;  // "--vram", "preset rtx3060-12g", ...
  /// Memory free for llama.cpp: total - used.
  int64_t free() const { return total - used; }
  /// What the plan may fill before its margin: free - reserve.
  int64_t budget() const { return free() - reserve; }
  bool has_gpu() const { return total > 0; }
};

/// Where the total comes from when --vram is not given: a what-if GPU (its
/// total and where it came from, e.g. "preset rtx3060-12g"), else the doctor's
/// profile (the first GPU; none listed = no GPU). Both may be absent.
struct GpuBudgetDefaults {
  std::optional<int64_t> what_if_total;
  std::string what_if_from;
  /// What the what-if machine assumes other programs hold (a preset's idle
  /// desktop), used when the total is the what-if's and --vram-used is absent.
  int64_t what_if_used = 0;
  std::string what_if_used_from;
  const MachineProfile* profile = nullptr;  // null: no profile
  std::string profile_path;
  std::string profile_error;  // why there is no profile (for the error)
  /// Whether the engine lists a GPU device (nullopt: not asked): without a
  /// flag, a what-if GPU or a profile, an engine without one means no GPU.
  std::optional<bool> engine_has_gpu;
};

/// The one model from the flags and the defaults. Errors name the flag and
/// the fix: --vram-used beyond the total, a reserve beyond the free memory,
/// and no figure at all for the total.
Result<GpuMemoryBudget> ResolveGpuBudget(const GpuBudgetFlags& flags,
                                         const GpuBudgetDefaults& defaults);

/// "GPU budget 9.80 GiB = 12.00 GiB total (--vram) - 720 MiB held by other
/// programs (measured by moetune doctor ...) - 1.50 GiB kept free (--reserve)",
/// or "GPU memory: none (--vram 0)" (the plan says once what no GPU means).
std::string GpuBudgetText(const GpuMemoryBudget& budget);

}  // namespace moetune
