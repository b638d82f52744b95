#include "watch/overflow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "stats/summary.h"

namespace moetune {

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
  if (external_ && !handed_over_) return *external_;
  return session_;
}

bool OverflowDetector::Provisional() const {
  return external_ && external_->provisional() && !handed_over_;
}

void OverflowDetector::MaybeHandOver(OverflowCheck* c) {
  if (!Provisional() || active_ || !session_.prefill_ready() || !session_.decode_ready()) return;
  handed_over_ = true;
  // How the prediction compared with what this server does, for the record.
  std::vector<std::string> parts;
  const double d = c->depth.value_or(0);
  const auto* predicted = dynamic_cast<const PredictedBaseline*>(external_.get());
  const ExpectedSpeed pred = predicted ? predicted->Predicted(d) : external_->At(d);
  const ExpectedSpeed own = session_.At(d);
  if (pred.prefill_tps && own.prefill_tps)
    parts.push_back(fmt::format("prefill x{:.2f}", *own.prefill_tps / *pred.prefill_tps));
  if (pred.decode_tps && own.decode_tps)
    parts.push_back(fmt::format("decode x{:.2f}", *own.decode_tps / *pred.decode_tps));
  c->reason += fmt::format(
      "; from now on the session's own first {} requests judge (measured wins over "
      "predicted; this server ran at {} of the prediction)",
      SessionBaseline::kReferenceCount,
      parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, ", ")));
  c->baseline_changed = true;
}

void OverflowDetector::AdoptCandidates() {
  // Against a prediction, prefill/decode ratios show the shape of the
  // server's speed; a model that is off shifts every request alike, while the
  // first spilled requests lag behind the others. Those are left out.
  std::vector<double> shapes;
  for (const auto& c : candidates_) shapes.push_back(c.shape);
  const double median = Median(shapes);
  std::vector<const Candidate*> kept;
  for (const auto& c : candidates_) {
    if (c.shape >= rules_.good_ratio * median) kept.push_back(&c);
  }
  if (static_cast<int>(kept.size()) < SessionBaseline::kReferenceCount) return;
  for (const Candidate* c : kept) session_.OfferPrefill(c->tokens, c->seconds, c->depth);
  candidates_.clear();
}

bool OverflowDetector::Healthy(double rp, double rd) const {
  // Both near what is expected, and prefill not lagging behind decode: the
  // first spilled requests (prefill down, decode not) never pass.
  return rp >= rules_.good_ratio && rd >= rules_.good_ratio && rp >= rules_.good_ratio * rd;
}

double OverflowDetector::Fill(double tokens) const {
  const double u = n_ubatch_;
  return tokens / (std::ceil(tokens / u) * u);
}

double OverflowDetector::ReferenceSeconds(const WorkSample& p) const {
  // A partial micro-batch may cost as much as a full one (the lower bound the
  // judgement uses) or only its share (all on the GPU, or CPU only): the time
  // is counted over whole micro-batches, but never as more than 4/3 faster
  // than measured, so the reference is off by at most that either way.
  return p.seconds * std::max(Fill(p.tokens), rules_.reference_fill_floor);
}

ExpectedSpeed OverflowDetector::Expected(double depth) const {
  ExpectedSpeed e = external_ && !handed_over_ ? external_->At(depth) : ExpectedSpeed{};
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
  // Only a reference complete before this observation grows (an observation
  // that completed it is in it already).
  const bool reference_was_complete = session_.prefill_ready() && session_.decode_ready();
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
  // A request judged healthy on both sides joins the session's reference
  // once it is complete, so that the curve is interpolated along the
  // conversation rather than extrapolated from its first requests.
  auto grow = [&](const OverflowCheck& j, const Pending& p) {
    if (!j.prefill_ratio || !decode_ratio || !Healthy(*j.prefill_ratio, *decode_ratio)) return;
    if (!reference_was_complete || p.tokens() < n_ubatch_) return;
    session_.ExtendPrefill(p.prefill.tokens, ReferenceSeconds(p.prefill), *p.prefill.depth);
    session_.ExtendDecode(o.decode->tokens, o.decode->seconds, *o.decode->depth);
  };
  if (pending_ && (o.decode || o.prefill)) {
    // The waiting prefill's request has ended (its decode is this one), or
    // another request started without a decode seen in between.
    c = Judge(*pending_, o.decode ? decode_ratio : std::nullopt);
    c.reason = fmt::format("prefill of t={:.1f}s: {}", pending_->time_s, c.reason);
    if (o.decode) grow(c, *pending_);
    pending_.reset();
  }
  if (o.prefill) {
    Pending p{*o.prefill, o.time_s, o.concurrent};
    if (o.decode) {
      c = Judge(p, decode_ratio);
      grow(c, p);
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

void OverflowDetector::Classify(double rp, double rd, OverflowCheck* c) const {
  const bool prefill_low = rp <= rules_.bad_prefill_ratio;
  const bool decode_normal = rd >= rules_.decode_floor;
  // Against the session's own line, decode above its expectation says the
  // line is low at this depth (its slope came out steep from a few noisy
  // requests): prefill's threshold follows decode, by at most
  // `decode_credit`. Measured curves and predictions (whose decode ratio is
  // 1.5 when the prediction is right) get no credit.
  const double credit = baseline().Kind() == "session" ? rules_.decode_credit : 1.0;
  const bool lopsided = rp <= rules_.lopsided * std::min(rd, credit);
  if (lopsided && decode_normal) {
    c->judgement = Judgement::kBad;
    c->reason = fmt::format("prefill x{:.2f} of expected while decode is x{:.2f}", rp, rd);
  } else if (prefill_low && (!run_.empty() || active_)) {
    // An overflow deepens: first the compute buffer lives in host memory
    // (prefill collapses, decode barely moves), then the KV cache too, and
    // decode falls as well. After the lopsided signature, prefill at most half
    // of normal continues the evidence whatever decode does, instead of
    // passing for a uniformly slow machine.
    c->judgement = Judgement::kBad;
    c->reason = fmt::format(
        "prefill x{:.2f} and decode x{:.2f} of expected, after prefill fell alone: the "
        "overflow deepened",
        rp, rd);
  } else if (rp >= rules_.good_ratio || (rp >= rules_.good_ratio * rd && decode_normal)) {
    c->judgement = Judgement::kGood;
    c->reason = fmt::format("prefill x{:.2f}, decode x{:.2f}: consistent", rp, rd);
  } else if (prefill_low && !decode_normal) {
    c->judgement = Judgement::kNeutral;
    c->reason = fmt::format(
        "prefill x{:.2f} and decode x{:.2f}: both slow, a slow machine rather than an overflow", rp,
        rd);
  } else {
    c->judgement = Judgement::kNeutral;
    c->reason = fmt::format("prefill x{:.2f}, decode x{:.2f}: between thresholds", rp, rd);
  }
}

void OverflowDetector::Track(const OverflowCheck& c, const Pending& pending,
                             double expected_prefill_tps) {
  const WorkSample& p = pending.prefill;
  if (c.judgement == Judgement::kBad) {
    good_streak_ = 0;
    run_.push_back({pending.time_s, *p.depth, p.tokens, p.rate(), expected_prefill_tps,
                    *c.prefill_ratio, *c.decode_ratio});
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
  // The session's own reference learns from prompts of at least one
  // micro-batch (ReferenceSeconds). Under a prediction it learns only from
  // requests the prediction did not judge bad and whose prefill does not lag
  // behind the others' (AdoptCandidates), so an overflow from the first
  // request, or one that starts while the reference is learnt, never becomes
  // the normal.
  const double fill = Fill(p.tokens);
  const bool provisional = Provisional();
  const bool learnable = p.tokens >= n_ubatch_;
  auto offer = [&] { session_.OfferPrefill(p.tokens, ReferenceSeconds(p), *p.depth); };
  if (learnable && !provisional) offer();
  auto learn = [&](const OverflowCheck& judged) {
    if (!learnable || !provisional || judged.judgement == Judgement::kBad) return;
    if (!judged.prefill_ratio || !judged.decode_ratio) {
      offer();
      return;
    }
    candidates_.push_back({p.tokens, ReferenceSeconds(p), *p.depth,
                           *judged.prefill_ratio / std::max(1e-9, *judged.decode_ratio)});
    AdoptCandidates();
  };
  const ExpectedSpeed e = Expected(*p.depth);
  c.expected_prefill_tps = e.prefill_tps;
  c.expected_decode_tps = e.decode_tps;
  if (!e.prefill_tps) {
    c.reason = fmt::format("no baseline yet ({})", baseline().Describe());
    learn(c);
    return c;
  }
  const double lower_bound = fill * *e.prefill_tps;
  const double rp = p.rate() / lower_bound;
  c.prefill_ratio = rp;
  if (!own_decode && decode_ratios_.empty()) {
    c.reason = "no decode observation to compare with yet";
    learn(c);
    return c;
  }
  const double rd = own_decode ? *own_decode : Median(decode_ratios_);
  c.decode_ratio = rd;
  Classify(rp, rd, &c);
  Track(c, pending, *e.prefill_tps);
  learn(c);
  MaybeHandOver(&c);
  return c;
}

}  // namespace moetune
