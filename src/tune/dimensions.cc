#include "tune/dimensions.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>

#include "tune/points.h"
#include "tune/slice.h"
#include "util/enum_names.h"

namespace moetune {
namespace {

constexpr std::array kDimensions = {Dimension::kThreads, Dimension::kMicroBatch};

int& ValueOf(RunConfig& c, Dimension d) {
  return d == Dimension::kThreads ? c.threads : c.n_ubatch;
}

}  // namespace

const char* DimensionName(Dimension dimension) {
  return dimension == Dimension::kThreads ? "threads" : "n_ubatch";
}

std::optional<Dimension> DimensionFromName(std::string_view name) {
  return EnumFromName(name, kDimensions, DimensionName);
}

int DimensionComparison::best_value() const {
  for (const auto& e : entries) {
    if (e.versus_best == Standing::kBest) return e.value;
  }
  return -1;
}

bool DimensionComparison::any_tie() const {
  return std::any_of(entries.begin(), entries.end(),
                     [](const Entry& e) { return e.versus_best == Standing::kTied; });
}

bool DimensionComparison::any_undecided() const {
  return std::any_of(entries.begin(), entries.end(),
                     [](const Entry& e) { return e.versus_best == Standing::kUndecided; });
}

std::optional<DimensionComparison> CompareDimension(const std::vector<const RunResult*>& rs,
                                                    Dimension dimension,
                                                    std::optional<int> prefer_n,
                                                    const Workload& workload,
                                                    const CurveRules& rules) {
  // Group depth-0 results by every setting except `dimension` (N included).
  std::map<std::tuple<int, SettingsKey>, std::map<int, Cell>> groups;
  for (const RunResult* r : rs) {
    if (r->config.n_depth != 0) continue;
    RunConfig c = r->config;
    int& value = ValueOf(c, dimension);
    const int v = value;
    value = 0;
    Cell& cell = groups[{c.placement.n_cpu_moe, KeyOf(c)}][v];
    if (IsPrefill(r->config)) cell.prefill.push_back(r);
    if (IsDecode(r->config)) cell.decode.push_back(r);
  }
  const std::map<int, Cell>* best_group = nullptr;
  int best_n = 0;
  for (const auto& [key, by_value] : groups) {
    if (by_value.size() < 2) continue;
    const int n = std::get<0>(key);
    const bool preferred = prefer_n && n == *prefer_n;
    const bool cur_preferred = best_group && prefer_n && best_n == *prefer_n;
    if (!best_group || (preferred && !cur_preferred) ||
        (preferred == cur_preferred && by_value.size() > best_group->size())) {
      best_group = &by_value;
      best_n = n;
    }
  }
  if (!best_group) return std::nullopt;
  DimensionComparison d;
  d.dimension = dimension;
  d.n_cpu_moe = best_n;
  std::vector<std::optional<Estimate>> objectives;
  for (const auto& [v, cell] : *best_group) {
    DimensionComparison::Entry e;
    e.value = v;
    e.prefill = PoolResults(cell.prefill);
    e.decode = PoolResults(cell.decode);
    e.objective = WorkloadObjective(e.prefill, e.decode, workload);
    objectives.push_back(e.objective);
    d.entries.push_back(std::move(e));
  }
  // Ties go to the smaller value (entries ascend): fewer threads leave cores
  // to the rest of the machine; a smaller micro-batch needs a smaller compute
  // buffer.
  const Choice choice = Choose(objectives, rules);
  if (!choice.best) return std::nullopt;
  for (size_t i = 0; i < d.entries.size(); ++i) d.entries[i].versus_best = choice.standings[i];
  d.chosen = d.entries[*choice.chosen].value;
  return d;
}

std::vector<DimensionComparison> CompareTuneDimensions(const std::vector<RunResult>& measurements,
                                                       const Workload& workload, int pick_n,
                                                       const CurveRules& rules) {
  std::set<int> prompts;
  for (const auto& m : measurements) {
    if (m.config.n_depth == 0 && m.config.n_prompt > 0) prompts.insert(m.config.n_prompt);
  }
  // Prefer the comparison at the pick's N, then the one with the most summaries.
  auto score = [&](const DimensionComparison& c) {
    int n = 0;
    for (const auto& e : c.entries) n += (e.prefill ? 1 : 0) + (e.decode ? 1 : 0);
    return std::make_pair(c.n_cpu_moe == pick_n, n);
  };
  std::vector<DimensionComparison> out;
  for (Dimension dimension : kDimensions) {
    std::optional<DimensionComparison> best;
    for (int prompt : prompts) {
      // One prompt size per comparison: prefill speed depends on it.
      std::vector<const RunResult*> rs;
      for (const auto& m : measurements) {
        const RunConfig& c = m.config;
        if (c.n_depth == 0 && (c.n_prompt == 0 || c.n_prompt == prompt) &&
            (IsPrefill(c) || IsDecode(c)))
          rs.push_back(&m);
      }
      auto c = CompareDimension(rs, dimension, pick_n, workload, rules);
      if (c && (!best || score(*c) > score(*best))) best = std::move(c);
    }
    if (best) out.push_back(std::move(*best));
  }
  return out;
}

}  // namespace moetune
