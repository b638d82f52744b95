#include "watch/overflow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace moetune {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

const char* JudgementName(Judgement j) {
  switch (j) {
    case Judgement::kNotJudged:
      return "not_judged";
    case Judgement::kGood:
      return "good";
    case Judgement::kNeutral:
      return "neutral";
    case Judgement::kBad:
      return "bad";
  }
  return "not_judged";
}

OverflowDetector::OverflowDetector(std::shared_ptr<const Baseline> external, int n_ubatch,
                                   OverflowRules rules)
    : external_(std::move(external)), n_ubatch_(std::max(1, n_ubatch)), rules_(rules) {}

const Baseline& OverflowDetector::baseline() const {
  if (external_) return *external_;
  return session_;
}

ExpectedSpeed OverflowDetector::Expected(double depth) const {
  ExpectedSpeed e = external_ ? external_->At(depth) : ExpectedSpeed{};
  const ExpectedSpeed s = session_.At(depth);
  if (!e.prefill_tps) e.prefill_tps = s.prefill_tps;
  if (!e.decode_tps) e.decode_tps = s.decode_tps;
  return e;
}

int OverflowDetector::ExtraLayers() const {
  if (evidence_.empty()) return 1;
  std::vector<double> r;
  for (const auto& e : evidence_) r.push_back(e.prefill_ratio);
  return Median(r) <= rules_.severe_ratio ? 2 : 1;
}

OverflowCheck OverflowDetector::Add(const Observation& o) {
  raised_now_ = cleared_now_ = false;
  // Decode first: it is the control that says the machine itself is fine.
  std::optional<double> decode_ratio;
  std::optional<double> expected_decode;
  if (o.decode && !o.concurrent && o.decode->depth &&
      o.decode->tokens >= rules_.min_decode_tokens) {
    const double d = *o.decode->depth;
    session_.OfferDecode(o.decode->tokens, o.decode->seconds, d);
    expected_decode = Expected(d).decode_tps;
    if (expected_decode && *expected_decode > 0) {
      decode_ratio = o.decode->rate() / *expected_decode;
      decode_ratios_.push_back(*decode_ratio);
      if (static_cast<int>(decode_ratios_.size()) > rules_.decode_window)
        decode_ratios_.erase(decode_ratios_.begin());
    }
  }
  OverflowCheck c;
  c.baseline_kind = baseline().Kind();
  c.expected_decode_tps = expected_decode;
  c.reason = o.prefill || o.decode ? "no prefill in this interval" : "idle";
  if (pending_ && (o.decode || o.prefill)) {
    // The waiting prefill's request has ended (its decode is this one), or
    // another request started without a decode seen in between.
    c = Judge(*pending_, o.decode ? decode_ratio : std::nullopt);
    c.reason = fmt::format("prefill of t={:.1f}s: {}", pending_->time_s, c.reason);
    pending_.reset();
  }
  if (o.prefill) {
    Pending p{*o.prefill, o.time_s, o.concurrent};
    if (o.decode) {
      c = Judge(p, decode_ratio);
    } else {
      pending_ = p;
      if (c.judgement == Judgement::kNotJudged) {
        c.depth = p.prefill.depth;
        c.reason = "prefill waits for the decode of the same request";
      }
    }
  }
  return c;
}

OverflowCheck OverflowDetector::Judge(const Pending& pending, std::optional<double> own_decode) {
  OverflowCheck c;
  c.baseline_kind = baseline().Kind();
  const WorkSample& p = pending.prefill;
  c.depth = p.depth;
  if (pending.concurrent) {
    c.reason = "several slots were busy: speeds are shared";
    return c;
  }
  if (!p.depth) {
    c.reason = "context depth unknown";
    return c;
  }
  if (p.tokens < rules_.min_prefill_tokens) {
    c.reason = fmt::format("prefill of {:.0f} tokens (under {:.0f}) is not evidence", p.tokens,
                           rules_.min_prefill_tokens);
    return c;
  }
  // The session's own reference uses full micro-batches only.
  if (p.tokens >= n_ubatch_) session_.OfferPrefill(p.tokens, p.seconds, *p.depth);
  const ExpectedSpeed e = Expected(*p.depth);
  c.expected_prefill_tps = e.prefill_tps;
  c.expected_decode_tps = e.decode_tps;
  if (!e.prefill_tps) {
    c.reason = fmt::format("no baseline yet ({})", baseline().Describe());
    return c;
  }
  const double u = n_ubatch_;
  const double batches = std::ceil(p.tokens / u);
  const double lower_bound = p.tokens / (batches * u) * *e.prefill_tps;
  const double rp = p.rate() / lower_bound;
  c.prefill_ratio = rp;
  if (!own_decode && decode_ratios_.empty()) {
    c.reason = "no decode observation to compare with yet";
    return c;
  }
  const double rd = own_decode ? *own_decode : Median(decode_ratios_);
  c.decode_ratio = rd;
  if (rp <= rules_.bad_prefill_ratio && rp <= rules_.lopsided * rd && rd >= rules_.decode_floor) {
    c.judgement = Judgement::kBad;
    c.reason = fmt::format("prefill x{:.2f} of expected while decode is x{:.2f}", rp, rd);
  } else if (rp >= rules_.good_ratio || rp >= rules_.good_ratio * rd) {
    c.judgement = Judgement::kGood;
    c.reason = fmt::format("prefill x{:.2f}, decode x{:.2f}: consistent", rp, rd);
  } else {
    c.judgement = Judgement::kNeutral;
    c.reason = fmt::format("prefill x{:.2f}, decode x{:.2f}: between thresholds", rp, rd);
  }

  if (c.judgement == Judgement::kBad) {
    good_streak_ = 0;
    run_.push_back({pending.time_s, *p.depth, p.tokens, p.rate(), *e.prefill_tps, rp, rd});
    double tokens = 0;
    for (const auto& r : run_) tokens += r.tokens;
    if (active_) {
      evidence_ = run_;
    } else if (static_cast<int>(run_.size()) >= rules_.bad_to_raise &&
               tokens >= rules_.min_bad_tokens) {
      active_ = true;
      raised_now_ = true;
      evidence_ = run_;
    }
  } else if (c.judgement == Judgement::kGood) {
    run_.clear();
    if (active_ && ++good_streak_ >= rules_.good_to_clear) {
      active_ = false;
      cleared_now_ = true;
      good_streak_ = 0;
    }
  }
  return c;
}

}  // namespace moetune
