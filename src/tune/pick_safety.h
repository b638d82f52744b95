#pragma once
/// Whether the pick is safe on the GPU at the target context, told from both
/// sides: the memory plan's headroom for the pick's own settings (against the
/// plan's margin) and whether the pick itself was measured at the target
/// context without a failure or a collapse. tune picks by measurement, so a
/// pick may use part of the plan's margin; that is safe only when a
/// measurement at the target context proved it, and the verdict says which.

#include <cstdint>
#include <optional>
#include <string_view>

namespace moetune {

/// Where the pick's headroom stands against the plan's margin.
enum class HeadroomStanding {
  kUnknown,       // no memory plan for the target GPU
  kClear,         // the whole margin is left
  kInsideMargin,  // part of the margin is used; the budget is not exceeded
  kOverBudget,    // the plan puts the pick beyond the GPU budget
};
/// "unknown", "clear", "inside_margin", "over_budget" (stable names, JSON).
const char* HeadroomStandingName(HeadroomStanding standing);
std::optional<HeadroomStanding> HeadroomStandingFromName(std::string_view name);

/// The pick's safety verdict (rendered by report/verdict_text.h PickSafetyText).
struct PickSafety {
  HeadroomStanding headroom = HeadroomStanding::kUnknown;
  int64_t headroom_bytes = 0;  // budget - margin - the pick's GPU bytes (plan/placement.h)
  int64_t margin_bytes = 0;    // the plan's margin
  /// The depth the pick ran at without failing or collapsing (the target
  /// context, less the prompt); nullopt when it was not measured there.
  std::optional<int> proven_depth;
  /// The pick's prefill at proven_depth over its prefill on an empty context.
  std::optional<double> prefill_kept;

  /// Safe: the margin is intact, or a measurement at the target context proved it.
  bool safe() const;
  /// The plan says the pick is tight (inside the margin or over the budget).
  bool tight() const;
};

/// The verdict from the plan's figures for the pick (nullopt: no plan) and
/// what was measured of the pick at the target context.
PickSafety AssessPickSafety(std::optional<int64_t> headroom_bytes, int64_t margin_bytes,
                            std::optional<int> proven_depth, std::optional<double> prefill_kept);

}  // namespace moetune
