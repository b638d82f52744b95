#include "tune/rejections.h"

#include <fmt/format.h>

#include <array>

#include "util/enum_names.h"

namespace moetune {
namespace {

constexpr std::array kRejectionKinds = {
    RejectionKind::kFailed,    RejectionKind::kBeyondCliff,     RejectionKind::kFailsAtDepth,
    RejectionKind::kCollapses, RejectionKind::kInferredAtDepth, RejectionKind::kRecorded};
constexpr std::array kDepthTroubles = {DepthTrouble::kFails, DepthTrouble::kCollapses};

using Rejected = std::map<int, Rejection>;

Rejection Reject(int n, RejectionKind kind) {
  Rejection r;
  r.n_cpu_moe = n;
  r.kind = kind;
  return r;
}

// Failed placements and the GPU side of the first cliff, on the shallowest curve.
void RejectAtDepth0(const CurveAtDepth& base, Rejected* rejected, std::vector<std::string>* notes) {
  for (const auto& p : base.points) {
    if (!p.failed()) continue;
    Rejection r = Reject(p.n_cpu_moe, RejectionKind::kFailed);
    r.failure = p.failure;
    rejected->emplace(p.n_cpu_moe, r);
  }
  if (base.cliffs.empty()) return;
  const Cliff& top = base.cliffs.front();  // found walking from the CPU end
  for (const auto& p : base.points) {
    if (p.n_cpu_moe >= top.n_cpu_moe_safe || rejected->count(p.n_cpu_moe)) continue;
    Rejection r = Reject(p.n_cpu_moe, RejectionKind::kBeyondCliff);
    r.cliff = top;
    rejected->emplace(p.n_cpu_moe, r);
  }
  if (top.n_cpu_moe_safe - top.n_cpu_moe_collapsed > 1) {
    notes->push_back(fmt::format(
        "the VRAM boundary lies somewhere between N={} and N={}; measuring the values between "
        "them can recover up to {} layer(s)",
        top.n_cpu_moe_collapsed, top.n_cpu_moe_safe,
        top.n_cpu_moe_safe - top.n_cpu_moe_collapsed - 1));
  }
}

// The depth checks of one deeper curve against the shallowest: each
// placement's prefill ratio against the healthiest comparable one
// (CollapseReference), and whether it collapses (Collapses).
std::vector<DepthCheck> CheckDepth(const CurveAtDepth& base, const CurveAtDepth& deep,
                                   int test_tokens, const CollapseRules& rules,
                                   std::vector<int>* reference_n) {
  std::map<int, const CurvePoint*> base_by_n;
  for (const auto& p : base.points) base_by_n[p.n_cpu_moe] = &p;
  std::vector<DepthCheck> checks;
  std::vector<DepthSpeeds> speeds;
  for (const auto& p : deep.points) {
    auto it = base_by_n.find(p.n_cpu_moe);
    if (it == base_by_n.end() || !p.prefill || !it->second->prefill) continue;
    const DepthSpeeds s{it->second->prefill->best, p.prefill->best};
    if (!s.valid()) continue;
    checks.push_back({p.n_cpu_moe, deep.depth, deep.depth + test_tokens, s.ratio(), 0, false});
    speeds.push_back(s);
  }
  for (size_t k = 0; k < checks.size(); ++k) {
    const size_t ref = CollapseReference(speeds, k, rules);
    checks[k].reference_ratio = checks[ref].ratio;
    checks[k].collapsed = ref != k && Collapses(speeds[k], speeds[ref], rules);
    reference_n->push_back(checks[ref].n_cpu_moe);
  }
  return checks;
}

// What one deeper curve rejects; its depth checks go to `reading`.
void RejectAtDepth(const CurveAtDepth& base, const CurveAtDepth& deep, int test_tokens, bool counts,
                   const CollapseRules& rules, Rejected* rejected, RejectionReading* reading,
                   std::vector<std::string>* notes) {
  // N -> what goes wrong at this depth, for the placements measured here.
  std::map<int, std::optional<DepthTrouble>> trouble;
  for (const auto& p : deep.points) {
    trouble[p.n_cpu_moe] = p.failed() ? std::optional(DepthTrouble::kFails) : std::nullopt;
    // A placement that does not even run at a depth the user will reach is out.
    if (p.failed() && counts && !rejected->count(p.n_cpu_moe)) {
      Rejection r = Reject(p.n_cpu_moe, RejectionKind::kFailsAtDepth);
      r.depth = deep.depth;
      r.failure = p.failure;
      rejected->emplace(p.n_cpu_moe, r);
    }
  }
  std::vector<int> reference_n;
  const std::vector<DepthCheck> checks = CheckDepth(base, deep, test_tokens, rules, &reference_n);
  for (size_t k = 0; k < checks.size(); ++k) {
    const DepthCheck& c = checks[k];
    if (c.collapsed) trouble[c.n_cpu_moe] = DepthTrouble::kCollapses;
    if (c.collapsed && counts && !rejected->count(c.n_cpu_moe)) {
      Rejection r = Reject(c.n_cpu_moe, RejectionKind::kCollapses);
      r.depth = c.depth;
      r.ratio = c.ratio;
      r.reference_n = reference_n[k];
      r.reference_ratio = c.reference_ratio;
      rejected->emplace(c.n_cpu_moe, r);
    }
    reading->depth_checks.push_back(c);
  }
  // A placement not measured at this depth with more experts on the GPU than
  // the next measured one, which fails or collapses here, holds more in VRAM
  // and would do the same.
  if (counts) {
    for (const auto& p : base.points) {
      if (trouble.count(p.n_cpu_moe) || rejected->count(p.n_cpu_moe)) continue;
      auto above = trouble.upper_bound(p.n_cpu_moe);
      if (above == trouble.end() || !above->second) continue;
      Rejection r = Reject(p.n_cpu_moe, RejectionKind::kInferredAtDepth);
      r.depth = deep.depth;
      r.reference_n = above->first;
      r.trouble = *above->second;
      rejected->emplace(p.n_cpu_moe, r);
    }
  }
  if (checks.size() == 1) {
    notes->push_back(fmt::format(
        "depth {}: one placement measured, so collapse cannot be told from normal attention "
        "cost; measure a more conservative N at the same depth too",
        deep.depth));
  }
}

}  // namespace

const char* RejectionKindName(RejectionKind kind) {
  switch (kind) {
    case RejectionKind::kFailed:
      return "failed";
    case RejectionKind::kBeyondCliff:
      return "beyond_cliff";
    case RejectionKind::kFailsAtDepth:
      return "fails_at_depth";
    case RejectionKind::kCollapses:
      return "collapses";
    case RejectionKind::kInferredAtDepth:
      return "inferred_at_depth";
    case RejectionKind::kRecorded:
      break;
  }
  return "recorded";
}

std::optional<RejectionKind> RejectionKindFromName(std::string_view name) {
  return EnumFromName(name, kRejectionKinds, RejectionKindName);
}

const char* DepthTroubleName(DepthTrouble trouble) {
  return trouble == DepthTrouble::kFails ? "fails" : "collapses";
}

std::optional<DepthTrouble> DepthTroubleFromName(std::string_view name) {
  return EnumFromName(name, kDepthTroubles, DepthTroubleName);
}

const Rejection* FindRejection(const std::vector<Rejection>& rejected, int n) {
  for (const auto& r : rejected) {
    if (r.n_cpu_moe == n) return &r;
  }
  return nullptr;
}

RejectionReading FindRejections(const std::vector<CurveAtDepth>& curves,
                                const std::map<int, int>& test_tokens,
                                std::optional<int64_t> target_ctx, const AnalysisRules& rules,
                                std::vector<std::string>* notes) {
  RejectionReading reading;
  if (curves.empty()) return reading;
  const CurveAtDepth& base = curves.front();
  Rejected rejected;
  RejectAtDepth0(base, &rejected, notes);
  for (size_t i = 1; i < curves.size(); ++i) {
    const CurveAtDepth& deep = curves[i];
    const bool counts = !target_ctx || deep.depth <= *target_ctx;
    auto tokens = test_tokens.find(deep.depth);
    RejectAtDepth(base, deep, tokens == test_tokens.end() ? 0 : tokens->second, counts,
                  rules.collapse, &rejected, &reading, notes);
  }
  for (auto& [n, r] : rejected) reading.rejected.push_back(std::move(r));
  return reading;
}

}  // namespace moetune
