#pragma once
/// What every phase of a tune (tune/*_phases.h) returns and writes: the
/// settings it leaves and the decision it made, and the pieces of the
/// evidence text the phases share.

#include <optional>
#include <string>

#include "tune/decision.h"
#include "tune/rules.h"
#include "tune/settings.h"

namespace moetune {

/// A phase's result: the settings the next phase starts from, and the
/// decision made (none when the phase had nothing to decide).
struct PhaseOutcome {
  TuneSettings settings;
  std::optional<Decision> decision;
};

/// A decision with its figures as evidence.
Decision MakeDecision(TunePhase phase, std::string choice, std::string rule, std::string evidence);

/// " best", " tie", ...: a candidate's standing after its figures in evidence.
std::string StandingSuffix(Standing standing);

}  // namespace moetune
