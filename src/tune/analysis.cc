#include "tune/analysis.h"

#include <fmt/format.h>

#include "tune/slice.h"

namespace moetune {

const Rejection* Analysis::RejectionOf(int n) const { return FindRejection(rejected, n); }

Analysis Analyze(const std::vector<RunResult>& all, const AnalysisOptions& o) {
  Analysis a;
  AnalysisSlice slice = SliceResults(all);
  a.model = slice.model;
  a.settings = slice.settings;
  a.has_prefill = slice.has_prefill;
  a.has_decode = slice.has_decode;
  a.notes = std::move(slice.notes);
  if (slice.by_depth.empty()) return a;

  a.curves = BuildCurves(slice, o.workload, o.rules.curve, &a.notes);
  const CurveAtDepth& base = a.curves.front();
  a.shape = base.shape;
  a.cliffs = base.cliffs;
  if (base.depth != 0) {
    a.notes.push_back(fmt::format(
        "no depth-0 results; the shallowest curve (depth {}) stands in for it", base.depth));
  }

  RejectionReading rejections =
      FindRejections(a.curves, slice.test_tokens, o.target_ctx, o.rules, &a.notes);
  const ReadOn read_on = a.has_prefill && a.has_decode
                             ? ReadOn::kTimeToAnswer
                             : (a.has_prefill ? ReadOn::kPrefill : ReadOn::kDecode);
  a.recommendation = Recommend(base, rejections, read_on, o, &a.notes);
  a.rejected = std::move(rejections.rejected);
  a.depth_checks = std::move(rejections.depth_checks);

  Recommendation& rec = a.recommendation;
  for (Dimension d : {Dimension::kThreads, Dimension::kMicroBatch}) {
    auto c = CompareDimension(slice.tests, d, rec.n_cpu_moe, o.workload, o.rules.curve);
    if (!c) continue;
    (d == Dimension::kThreads ? rec.threads : rec.n_ubatch) = c->chosen;
    a.comparisons.push_back(std::move(*c));
  }
  return a;
}

}  // namespace moetune
