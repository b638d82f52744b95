#pragma once
/// The phases of a tune that try one alternative setting against the current
/// one, over its ledger (tune/ledger.h): flash attention on or off, the load
/// mode (memory-mapped or loaded), which layers' experts stay on the CPU (the
/// first or the last N), the order of several devices, and a q8_0 KV cache only when it buys a
/// layer of experts on the GPU (and its prefill does not collapse at depth).
/// A tie keeps flash attention on, the default load mode, the first layers'
/// experts, the current device order and the f16 cache.

#include "tune/ledger.h"
#include "tune/phase.h"

namespace moetune {

/// Chooses `-fa on` or `-fa off`; nothing when the space does not try it.
PhaseOutcome RunFlashAttentionPhase(TuneLedger& ledger, TuneSettings cur);

/// Chooses the default load mode or `-lm none`; nothing when the space does
/// not try it.
PhaseOutcome RunLoadModePhase(TuneLedger& ledger, TuneSettings cur);

/// Keeps the experts of the first N layers on the CPU (--n-cpu-moe N) or of
/// the last N (llama.cpp's fit order), whichever is faster beyond the noise
/// (a tie keeps the first); nothing where the order cannot matter (no GPU,
/// no experts, several devices, N of 0 or every layer). The last order is
/// measured only when the plan fits it at the target context.
PhaseOutcome RunExpertOrderPhase(TuneLedger& ledger, TuneSettings cur);

/// Across two or three devices: llama.cpp's device order (-dev; RPC devices
/// first) against every other order at the same N, each with its own split,
/// measured at depth 0; another order is kept only when it is faster beyond
/// the noise (a tie keeps the current one). An order is measured only when the
/// plan fits it at the target context, or it leaves the tightest device no
/// less room than the current order does. Nothing with one device.
PhaseOutcome RunDeviceOrderPhase(TuneLedger& ledger, TuneSettings cur);

/// Tries a q8_0 KV cache with one more layer of experts on the GPU; nothing
/// when the space does not try it, placement was not tuned or N is 0.
PhaseOutcome RunKvCachePhase(TuneLedger& ledger, TuneSettings cur, bool placement_tuned);

}  // namespace moetune
