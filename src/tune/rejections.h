#pragma once
/// The third step of reading measurements (tune/analysis.h): which placements
/// are out, and why, as typed verdicts with their figures - failures, the GPU
/// side of the VRAM cliff, prefill collapsing with depth (the collapse rule of
/// tune/rules.h), failures at depth, and placements that hold more in VRAM
/// than one that fails or collapses at depth. Text is rendered from these in
/// report/ and never parsed back.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tune/curve.h"
#include "tune/rules.h"

namespace moetune {

/// Prefill at `depth` relative to depth 0 for one N.
struct DepthCheck {
  int n_cpu_moe = 0;
  int depth = 0;
  int context = 0;             // tokens in the context during the test (depth + test)
  double ratio = 0;            // prefill(depth) / prefill(0), best repetitions
  double reference_ratio = 0;  // the healthiest comparable N's ratio at this depth
  bool collapsed = false;
};

/// Why a placement is out.
enum class RejectionKind {
  kFailed,           // failed to run on the shallowest curve: `failure`
  kBeyondCliff,      // on the GPU side of the first cliff: `cliff`
  kFailsAtDepth,     // fails to run at `depth`: `failure`
  kCollapses,        // prefill collapses at `depth`: `ratio`, `reference_n`, `reference_ratio`
  kInferredAtDepth,  // more experts on the GPU than `reference_n`, which shows `trouble` at `depth`
  kRecorded,         // read from a file written before kinds were recorded: `recorded`
};
/// "failed", "beyond_cliff", "fails_at_depth", "collapses", "inferred_at_depth",
/// "recorded" (stable names, used in JSON).
const char* RejectionKindName(RejectionKind kind);
std::optional<RejectionKind> RejectionKindFromName(std::string_view name);

/// What a placement measured at depth shows there.
enum class DepthTrouble { kFails, kCollapses };
/// "fails", "collapses".
const char* DepthTroubleName(DepthTrouble trouble);
std::optional<DepthTrouble> DepthTroubleFromName(std::string_view name);

struct Rejection {
  int n_cpu_moe = 0;
  RejectionKind kind = RejectionKind::kFailed;
  std::string failure;  // the engine's words ("oom_device: ..."): kFailed, kFailsAtDepth
  Cliff cliff;          // kBeyondCliff
  int depth = 0;        // kFailsAtDepth, kCollapses, kInferredAtDepth
  double ratio = 0;     // kCollapses: prefill(depth) / prefill(0)
  int reference_n = 0;  // kCollapses: the reference; kInferredAtDepth: the placement measured
  double reference_ratio = 0;                   // kCollapses
  DepthTrouble trouble = DepthTrouble::kFails;  // kInferredAtDepth
  std::string recorded;                         // kRecorded: the text as the file gave it

  /// Rejected for what was measured at depth (not inferred from a neighbour).
  bool measured_at_depth() const {
    return kind == RejectionKind::kFailsAtDepth || kind == RejectionKind::kCollapses;
  }
  /// Rejected on the shallowest curve: it failed there, or lies beyond the cliff.
  bool at_depth0() const {
    return kind == RejectionKind::kFailed || kind == RejectionKind::kBeyondCliff;
  }
};

/// The rejection of placement `n` among `rejected`, or nullptr.
const Rejection* FindRejection(const std::vector<Rejection>& rejected, int n);

/// The rejections of a reading (ascending N, one per placement: the first
/// reason found) and the depth checks behind them.
struct RejectionReading {
  std::vector<Rejection> rejected;
  std::vector<DepthCheck> depth_checks;
};

/// Reads `curves` (ascending depth; the first is the shallowest):
/// `test_tokens` gives the tokens each depth's tests add to the context; depth
/// data beyond `target_ctx` shows collapse but does not reject. Adds notes
/// (a cliff with unmeasured N inside it, a depth with one placement).
RejectionReading FindRejections(const std::vector<CurveAtDepth>& curves,
                                const std::map<int, int>& test_tokens,
                                std::optional<int64_t> target_ctx, const AnalysisRules& rules,
                                std::vector<std::string>* notes);

}  // namespace moetune
