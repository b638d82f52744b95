// TuneLedger's quiet-machine checks (tune/ledger.h): busy results measured
// again, and the anchor that catches drift. One class in two files, each
// readable; the rest of the ledger is in tune/ledger.cc.
#include <fmt/format.h>

#include <algorithm>

#include "hw/machine_load.h"
#include "tune/journal.h"
#include "tune/ledger.h"

namespace moetune {
namespace {

// The anchor's decode length: long enough for a steady speed, short enough
// to cost a few seconds every TuneRules::anchor_every engine calls.
constexpr int kAnchorTokens = 32;

bool Busy(const RunResult& r) {
  return r.other_cpu_cores && IsBusy(MachineLoad{0, *r.other_cpu_cores});
}

// The decode speed of a result: its best repetition (BestRepetition, the rule
// the collapse rule reads speeds with: interference only slows a run down, so
// one disturbed repetition must not pass for drift, nor hide it in the reference).
std::optional<double> DecodeSpeed(const RunResult& r) {
  if (!r.ok() || r.samples_ts.empty()) return std::nullopt;
  return BestRepetition(r.samples_ts);
}

// Removes from `all` the results equal (by journal key and occurrence of
// position) to positions `drop`, given in ascending order.
void Erase(std::vector<RunResult>* all, const std::vector<std::size_t>& drop) {
  for (auto it = drop.rbegin(); it != drop.rend(); ++it)
    all->erase(all->begin() + static_cast<std::ptrdiff_t>(*it));
}

}  // namespace

void TuneLedger::RemeasureBusy(std::vector<RunResult>* out, const std::string& label) {
  std::vector<RunConfig> again;
  std::vector<std::size_t> positions;  // in all_, of the busy results of `out`
  for (const RunResult& r : *out) {
    if (!Busy(r)) continue;
    again.push_back(r.config);
    // The latest entry of this configuration in all_ is this result.
    const std::string key = Journal::Key(r.config);
    for (std::size_t i = all_.size(); i-- > 0;) {
      if (Journal::Key(all_[i].config) == key &&
          std::find(positions.begin(), positions.end(), i) == positions.end()) {
        positions.push_back(i);
        break;
      }
    }
  }
  if (again.empty()) return;
  nested_ = true;
  const std::vector<RunResult> second =
      MeasureConfigs(again, label + " (measured again: the machine was busy)");
  nested_ = false;
  if (second.empty()) return;  // the budget: the busy figures stand, marked
  std::sort(positions.begin(), positions.end());
  Erase(&all_, positions);
  busy_remeasured_ += second.size();
  // `out` keeps its order: each busy result is replaced by its second measurement.
  std::size_t k = 0;
  for (RunResult& r : *out) {
    if (Busy(r) && k < second.size()) r = second[k++];
  }
  if (busy_remeasured_ == second.size()) {
    AddNote(
        "measurements taken while other processes kept the CPU busy are measured again once "
        "(each result carries other_cpu_cores; the closing note counts what stayed busy)");
  }
}

std::optional<double> TuneLedger::MeasureAnchor() {
  nested_ = true;
  const std::vector<RunResult> got = MeasureConfigs({*anchor_}, "anchor (drift check)");
  nested_ = false;
  if (got.empty()) return std::nullopt;
  return DecodeSpeed(got.front());
}

void TuneLedger::CheckAnchor(const std::vector<RunResult>& out) {
  if (!anchor_) {
    // The first decode that ran, shortened: a few seconds each time, and its
    // own test (its figures never join the pools the phases compare).
    for (const RunResult& r : out) {
      if (r.config.n_gen > 0 && r.config.n_depth == 0 && r.ok() && !Busy(r)) {
        anchor_ = r.config;
        anchor_->n_gen = std::min(r.config.n_gen, kAnchorTokens);
        anchor_->repetitions = 3;
        anchor_ref_ = MeasureAnchor();
        if (!anchor_ref_) anchor_.reset();
        clean_since_ = all_.size();
        return;
      }
    }
    return;
  }
  if (++calls_since_anchor_ < static_cast<std::size_t>(opt_.rules.anchor_every)) return;
  calls_since_anchor_ = 0;
  const std::size_t before = all_.size();
  const std::optional<double> now = MeasureAnchor();
  if (!now) return;
  auto drifted = [&](double speed) {
    return speed < *anchor_ref_ * (1 - opt_.rules.drift_fraction);
  };
  if (!drifted(*now)) {
    clean_since_ = all_.size();
    return;
  }
  const double slower = 1 - *now / *anchor_ref_;
  // The drifted anchor's own figures are not data about its configuration.
  Erase(&all_, {before});
  const std::optional<double> second = MeasureAnchor();
  if (second && !drifted(*second)) {
    AddNote(fmt::format(
        "the machine drifted: the anchor ran {:.0f}% slower than at the start, then recovered; "
        "the measurements since the last clean anchor were measured again",
        slower * 100));
    RemeasureSince(clean_since_);
    clean_since_ = all_.size();
    return;
  }
  AddNote(fmt::format(
      "the machine drifted: the anchor runs {:.0f}% slower than at the start and did not "
      "recover (thermal throttling, or a program that started halfway); figures from here on "
      "are slower, and comparisons stay fair only while the drift holds steady",
      slower * 100));
  if (second) anchor_ref_ = second;
  clean_since_ = all_.size();
}

void TuneLedger::RemeasureSince(std::size_t from) {
  if (from >= all_.size()) return;
  std::vector<RunConfig> again;
  std::vector<std::size_t> positions;
  for (std::size_t i = from; i < all_.size(); ++i) {
    if (anchor_ && Journal::Key(all_[i].config) == Journal::Key(*anchor_)) continue;
    again.push_back(all_[i].config);
    positions.push_back(i);
  }
  if (again.empty()) return;
  nested_ = true;
  const std::vector<RunResult> second = MeasureConfigs(again, "measured again after drift");
  nested_ = false;
  if (second.size() == again.size()) Erase(&all_, positions);
}

}  // namespace moetune
