#pragma once
/// The method's rule for daily use, applied continuously: when the time to the
/// first token grows with the conversation while decode looks normal, the GPU
/// is overflowing (docs/method.md). Concretely, for every observation with
/// enough prefill work, at a known depth:
///
///   prefill ratio  r_p = observed prefill / expected at that depth
///   decode ratio   r_d = the same request's decode / expected at its depth
///                  (the median of the last three decode observations when
///                  the request's own decode is not known)
///   bad   when r_p <= 0.5 * min(r_d, 1.3) and r_d >= 0.5
///         (prefill at most half of normal and twice as far off as decode,
///          with decode itself normal enough: a uniformly slow machine is not
///          an overflow; against the session's own line, a decode above its
///          expectation says the line is low there and raises the threshold
///          with it, up to 0.65; elsewhere the 1.3 is 1)
///   also bad when r_p <= 0.5 right after bad ones (no good one between) or
///         while the alarm is active, whatever decode does: an overflow
///         deepens from the compute buffer to the KV cache, and then decode
///         falls too; alone, both slow is a slow machine (neutral)
///   good  when r_p >= 0.7, or r_p >= 0.7 * r_d with r_d >= 0.5
///
/// The alarm is raised after 3 bad observations without a good one between
/// them and at least 512 prefill tokens among them, and cleared after 3 good
/// ones in a row (hysteresis). The expectation for a prefill of n tokens with
/// micro-batch U is a lower bound, n / (ceil(n/U) * U) times the baseline
/// speed: a partial micro-batch may cost as much as a full one (with experts
/// in host memory each micro-batch copies them to the GPU), so short prompts
/// never look slow by accident. Live, the server counts a request's prefill
/// when its first token is sampled and its decode when it ends, so a prefill
/// waits for the next decode observation (its own request's) to be judged.
/// A predicted baseline is provisional: the session's own first requests
/// (those it did not judge bad) replace it once there are enough of them and
/// no overflow alarm is active. docs/watch.md gives the reasons for each number.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "watch/baseline.h"
#include "watch/observation.h"

namespace moetune {

struct OverflowRules {
  double bad_prefill_ratio = 0.5;
  double lopsided = 0.5;
  /// Against the session's own line, decode above its expectation raises
  /// prefill's bad threshold with it, up to this factor (0.5 * 1.3 = 0.65).
  double decode_credit = 1.3;
  double decode_floor = 0.5;
  double good_ratio = 0.7;
  int bad_to_raise = 3;
  int good_to_clear = 3;
  double min_bad_tokens = 512;
  double min_prefill_tokens = 64;
  /// The session's reference counts a prompt's time over whole micro-batches
  /// (n / (ceil(n/U) * U) of it), but at least this share of it.
  double reference_fill_floor = 0.75;
  double min_decode_tokens = 16;
  int decode_window = 3;
  /// Below this prefill ratio the fix is two more layers on the CPU, else one.
  double severe_ratio = 0.25;
};

enum class Judgement { kNotJudged, kGood, kNeutral, kBad };
const char* JudgementName(Judgement j);

/// The judgement of one observation.
struct OverflowCheck {
  Judgement judgement = Judgement::kNotJudged;
  std::string reason;  // why not judged, or what decided
  std::optional<double> depth;
  std::optional<double> expected_prefill_tps;  // full micro-batches at this depth
  std::optional<double> expected_decode_tps;
  std::optional<double> prefill_ratio;
  std::optional<double> decode_ratio;
  std::string baseline_kind;  // "measured", "predicted", "session"
  /// True on the judgement after which the session's own requests replace a
  /// prediction (the reason says how the prediction compared).
  bool baseline_changed = false;
};

/// One bad observation kept as evidence.
struct OverflowEvidence {
  double time_s = 0;
  double depth = 0;
  double tokens = 0;
  double prefill_tps = 0;
  double expected_prefill_tps = 0;
  double prefill_ratio = 0;
  double decode_ratio = 0;
};

class OverflowDetector {
 public:
  /// `external` may be null (then the session's own first requests are the
  /// baseline); `n_ubatch` is the server's -ub.
  OverflowDetector(std::shared_ptr<const Baseline> external, int n_ubatch,
                   OverflowRules rules = {});

  /// Takes one observation; returns the judgement made by it (of this
  /// observation's prefill, or of a waiting one it completed).
  OverflowCheck Add(const Observation& o);

  bool active() const { return active_; }
  /// True once after the alarm was raised / cleared by the last Add.
  bool raised_now() const { return raised_now_; }
  bool cleared_now() const { return cleared_now_; }
  /// The bad observations behind the current (or last) alarm.
  const std::vector<OverflowEvidence>& evidence() const { return evidence_; }
  /// One or two more layers of experts on the CPU, from how deep prefill fell.
  int ExtraLayers() const;
  /// The baseline that judges now: the external one, else the session's; a
  /// provisional (predicted) one until the session has its own reference of
  /// requests the prediction did not judge bad, and no overflow alarm is active.
  const Baseline& baseline() const;
  /// True once the session's own requests replaced a prediction.
  bool handed_over() const { return handed_over_; }
  const OverflowRules& rules() const { return rules_; }

 private:
  ExpectedSpeed Expected(double depth) const;
  // A prediction judges and the session has not taken over yet.
  bool Provisional() const;
  void MaybeHandOver(OverflowCheck* c);
  // The judgement of a prefill at `rp` and a decode at `rd` times the
  // expected speeds, with its reason.
  void Classify(double rp, double rd, OverflowCheck* c) const;
  // Under a prediction: requests not judged bad wait here with their r_p / r_d
  // until five of them agree (r_p / r_d at least 0.7 of the median), then
  // become the session's reference.
  struct Candidate {
    double tokens = 0, seconds = 0, depth = 0, shape = 0;
  };
  void AdoptCandidates();
  std::vector<Candidate> candidates_;
  // A request that may join the session's reference: r_p and r_d >= 0.7 and
  // r_p >= 0.7 * r_d.
  bool Healthy(double prefill_ratio, double decode_ratio) const;
  // n / (ceil(n / U) * U): how full a prompt's micro-batches are.
  double Fill(double tokens) const;
  // A prompt's seconds as the session's reference counts them.
  double ReferenceSeconds(const WorkSample& prefill) const;
  // A prefill waiting for its request's decode.
  struct Pending {
    WorkSample prefill;
    double time_s = 0;
    bool concurrent = false;
    double tokens() const { return prefill.tokens; }
  };
  OverflowCheck Judge(const Pending& p, std::optional<double> own_decode_ratio);
  // The run of bad requests and the streak of good ones after judgement `c`:
  // the alarm raised or cleared.
  void Track(const OverflowCheck& c, const Pending& pending, double expected_prefill_tps);
  std::optional<Pending> pending_;

  std::shared_ptr<const Baseline> external_;
  SessionBaseline session_;
  int n_ubatch_;
  OverflowRules rules_;
  std::vector<double> decode_ratios_;  // the last `decode_window`
  std::vector<OverflowEvidence> run_;  // bad observations since the last good one
  std::vector<OverflowEvidence> evidence_;
  int good_streak_ = 0;
  bool active_ = false;
  bool handed_over_ = false;
  bool raised_now_ = false;
  bool cleared_now_ = false;
};

}  // namespace moetune
