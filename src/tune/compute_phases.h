#pragma once
/// The compute phases of a tune, over its ledger (tune/ledger.h): the thread
/// count (topology-derived candidates) and the micro-batch (with the N its
/// compute buffer needs). The contenders tied with the best get repetitions
/// until the intervals separate (TuneLedger::MeasureAndChoose); a tie goes to
/// fewer threads and to the smaller micro-batch.

#include "tune/ledger.h"
#include "tune/phase.h"

namespace moetune {

/// Chooses `-t` among the space's thread candidates; no decision when there
/// is one candidate or none.
PhaseOutcome RunThreadsPhase(TuneLedger& ledger, TuneSettings cur);

/// Chooses `-ub` (and `-b`, at least `-ub`) among MicroBatchCandidates, each
/// with the fewest extra layers on the CPU its compute buffer needs; no
/// decision when fewer than two sizes can be tried and none was skipped.
PhaseOutcome RunMicroBatchPhase(TuneLedger& ledger, TuneSettings cur);

}  // namespace moetune
