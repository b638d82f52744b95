#pragma once
/// What every phase of a tune (tune/*_phases.h) returns and writes: the
/// settings it leaves and the decision it made, and the pieces of the
/// evidence text the phases share.

#include <optional>
#include <string>
#include <vector>

#include "tune/decision.h"
#include "tune/ledger.h"
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

/// ", 0.0123 requests/s best, chosen", ", ... tie", ...: candidate `i`'s
/// objective on the workload (what the tie rule compares), its standing, and
/// whether it is the one the phase chose, after its figures in evidence: the
/// evidence and the choice say the same thing (a tie that goes to the safer
/// candidate shows which one was taken and why "best" was not).
std::string StandingSuffix(const Choice& choice, std::size_t i,
                           const std::vector<TuneLedger::Scored>& scored);

/// When `choice` could not decide (Choice::undecided): the contender (best or
/// undecided) whose repetitions spread most, prefill or decode, named as in
/// `names`, with `kept` the starting value the phase keeps. nullopt when the
/// choice decided.
std::optional<Undecided> UndecidedOf(const Choice& choice,
                                     const std::vector<TuneLedger::Scored>& scored,
                                     const std::vector<std::string>& names,
                                     const std::string& kept);

/// The decision of a phase that could not decide: `choice` is the starting
/// value kept; the rule is rendered from `undecided` (report/verdict_text.h).
Decision UndecidedDecision(TunePhase phase, std::string choice, Undecided undecided,
                           std::string evidence);

}  // namespace moetune
