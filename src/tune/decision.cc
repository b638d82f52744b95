#include "tune/decision.h"

#include <array>

#include "util/enum_names.h"

namespace moetune {
namespace {

constexpr std::array kPhases = {
    TunePhase::kPlacement,      TunePhase::kLongContext, TunePhase::kExpertOrder,
    TunePhase::kDeviceOrder,    TunePhase::kThreads,     TunePhase::kMicroBatch,
    TunePhase::kFlashAttention, TunePhase::kLoadMode,    TunePhase::kKvCacheType,
    TunePhase::kFinalCheck,     TunePhase::kDefaults};

}  // namespace

const char* TunePhaseName(TunePhase phase) {
  switch (phase) {
    case TunePhase::kPlacement:
      return "placement";
    case TunePhase::kLongContext:
      return "long context";
    case TunePhase::kExpertOrder:
      return "expert order";
    case TunePhase::kDeviceOrder:
      return "device order";
    case TunePhase::kThreads:
      return "threads";
    case TunePhase::kMicroBatch:
      return "micro-batch";
    case TunePhase::kFlashAttention:
      return "flash attention";
    case TunePhase::kLoadMode:
      return "load mode";
    case TunePhase::kKvCacheType:
      return "KV cache type";
    case TunePhase::kFinalCheck:
      return "final check";
    case TunePhase::kDefaults:
      break;
  }
  return "defaults";
}

std::optional<TunePhase> TunePhaseFromName(std::string_view name) {
  return EnumFromName(name, kPhases, TunePhaseName);
}

}  // namespace moetune
