#include "tune/pick_safety.h"

#include <array>

#include "util/enum_names.h"

namespace moetune {

const char* HeadroomStandingName(HeadroomStanding standing) {
  switch (standing) {
    case HeadroomStanding::kClear:
      return "clear";
    case HeadroomStanding::kInsideMargin:
      return "inside_margin";
    case HeadroomStanding::kOverBudget:
      return "over_budget";
    case HeadroomStanding::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<HeadroomStanding> HeadroomStandingFromName(std::string_view name) {
  constexpr std::array kAll = {HeadroomStanding::kUnknown, HeadroomStanding::kClear,
                               HeadroomStanding::kInsideMargin, HeadroomStanding::kOverBudget};
  return EnumFromName(name, kAll, HeadroomStandingName);
}

bool PickSafety::tight() const {
  return headroom == HeadroomStanding::kInsideMargin || headroom == HeadroomStanding::kOverBudget;
}

bool PickSafety::safe() const {
  if (proven_depth) return true;
  return headroom == HeadroomStanding::kClear;
}

PickSafety AssessPickSafety(std::optional<int64_t> headroom_bytes, int64_t margin_bytes,
                            std::optional<int> proven_depth, std::optional<double> prefill_kept) {
  PickSafety s;
  s.margin_bytes = margin_bytes;
  s.proven_depth = proven_depth;
  s.prefill_kept = proven_depth ? prefill_kept : std::nullopt;
  if (!headroom_bytes) return s;
  s.headroom_bytes = *headroom_bytes;
  if (*headroom_bytes >= 0) {
    s.headroom = HeadroomStanding::kClear;
  } else if (*headroom_bytes >= -margin_bytes) {
    s.headroom = HeadroomStanding::kInsideMargin;
  } else {
    s.headroom = HeadroomStanding::kOverBudget;
  }
  return s;
}

}  // namespace moetune
