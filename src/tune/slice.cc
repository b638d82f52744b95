#include "tune/slice.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "config/flags.h"

namespace moetune {
namespace {

// The part of a placement that stays fixed along the N curve, as flags: the
// -ot rules that N does not write and, across devices, their order (N also
// writes -ts and the per-device rules there).
std::string FixedPlacement(const Placement& p) {
  Placement fixed = p;
  fixed.n_cpu_moe = 0;
  std::string s;
  if (!fixed.OverrideTensor().empty()) s += " -ot " + fixed.OverrideTensor();
  if (!p.devices.empty()) {
    std::string devs;
    for (const DevicePlacement& d : p.devices) devs += (devs.empty() ? "" : ",") + d.device;
    s += " -dev " + devs + " (-ts with N)";
  }
  return s;
}

std::string Describe(const RunConfig& c) {
  std::string s =
      fmt::format("{} {} {} {}", FlagText(FlagId::kGpuLayers, c.placement.n_gpu_layers),
                  FlagText(FlagId::kThreads, c.threads), FlagText(FlagId::kUbatch, c.n_ubatch),
                  FlagText(FlagId::kBatch, c.n_batch));
  if (c.flash_attn != FlashAttn::kDefault)
    s += " " + FlagText(FlagId::kFlashAttn, FlashAttnName(c.flash_attn));
  if (c.type_k != ggml_type::kF16 || c.type_v != ggml_type::kF16)
    s += fmt::format(" {} {}", FlagText(FlagId::kCacheTypeK, GgmlTypeName(c.type_k)),
                     FlagText(FlagId::kCacheTypeV, GgmlTypeName(c.type_v)));
  s += FixedPlacement(c.placement);
  if (c.load_mode != LoadMode::kDefault)
    s += " " + FlagText(FlagId::kLoadMode, LoadModeName(c.load_mode));
  return s;
}

// The most measured model; a note when there are several.
std::string PickModel(const std::vector<RunResult>& all, std::vector<std::string>* notes) {
  std::map<std::string, int> per_model;
  for (const auto& r : all) ++per_model[r.config.model];
  std::string model =
      std::max_element(per_model.begin(), per_model.end(), [](const auto& x, const auto& y) {
        return x.second < y.second;
      })->first;
  if (per_model.size() > 1) {
    notes->push_back(fmt::format(
        "the results cover {} models; analysing '{}' ({} results), the most measured one",
        per_model.size(), model, per_model[model]));
  }
  return model;
}

}  // namespace

SettingsKey KeyOf(const RunConfig& c) {
  return {c.placement.n_gpu_layers,
          FixedPlacement(c.placement),
          c.threads,
          c.n_ubatch,
          c.n_batch,
          c.flash_attn,
          c.type_k,
          c.type_v,
          c.load_mode};
}

SettingsKey CurveKey(const std::vector<const RunResult*>& rs) {
  std::map<SettingsKey, std::set<int>> n_per_key;
  std::map<SettingsKey, int> count_per_key;
  for (const RunResult* r : rs) {
    n_per_key[KeyOf(r->config)].insert(r->config.placement.n_cpu_moe);
    ++count_per_key[KeyOf(r->config)];
  }
  const SettingsKey* key = nullptr;
  for (const auto& [k, ns] : n_per_key) {
    if (!key || ns.size() > n_per_key[*key].size() ||
        (ns.size() == n_per_key[*key].size() && count_per_key[k] > count_per_key[*key])) {
      key = &k;
    }
  }
  return *key;
}

bool IsPrefill(const RunConfig& c) { return c.n_prompt > 0 && c.n_gen == 0; }
bool IsDecode(const RunConfig& c) { return c.n_gen > 0 && c.n_prompt == 0; }

AnalysisSlice SliceResults(const std::vector<RunResult>& all) {
  AnalysisSlice s;
  if (all.empty()) {
    s.notes.push_back("no results to analyse");
    return s;
  }
  s.model = PickModel(all, &s.notes);
  int combined = 0;
  for (const auto& r : all) {
    if (r.config.model != s.model) continue;
    if (r.config.n_prompt > 0 && r.config.n_gen > 0) {
      ++combined;
      continue;
    }
    s.tests.push_back(&r);
    s.has_prefill = s.has_prefill || IsPrefill(r.config);
    s.has_decode = s.has_decode || IsDecode(r.config);
  }
  if (combined > 0) {
    s.notes.push_back(fmt::format(
        "{} combined prefill+decode test(s) (-pg) left out: they do not separate the two speeds",
        combined));
  }
  if (s.tests.empty()) {
    s.notes.push_back("no prefill (-p) or decode (-n) results to analyse");
    return s;
  }
  if (!s.has_prefill) {
    s.notes.push_back(
        "decode only: the VRAM cliff shows in prefill first; measure prefill too (-p 512)");
  }
  const SettingsKey key = CurveKey(s.tests);
  for (const RunResult* r : s.tests) {
    if (KeyOf(r->config) != key) continue;
    s.settings = Describe(r->config);
    int& tokens = s.test_tokens[r->config.n_depth];
    tokens = std::max(tokens, r->config.n_prompt + r->config.n_gen);
    Cell& c = s.by_depth[r->config.n_depth][r->config.placement.n_cpu_moe];
    (IsPrefill(r->config) ? c.prefill : c.decode).push_back(r);
  }
  return s;
}

std::vector<CurveAtDepth> BuildCurves(const AnalysisSlice& slice, const Workload& workload,
                                      const CurveRules& rules, std::vector<std::string>* notes) {
  std::vector<CurveAtDepth> curves;
  bool assumed = false;
  for (const auto& [depth, by_n] : slice.by_depth) {
    CurveAtDepth c;
    c.depth = depth;
    for (const auto& [n, cell] : by_n) {
      if (auto p = PointOf(n, cell, workload, &assumed)) c.points.push_back(std::move(*p));
    }
    c.cliffs = FindCliffs(c.points, rules);
    c.shape = ClassifyCurve(c.points, c.cliffs, rules);
    curves.push_back(std::move(c));
  }
  if (assumed) {
    notes->push_back(
        "some results carry a mean and standard deviation but no samples; 5 repetitions "
        "(llama-bench's default) were assumed for their intervals");
  }
  return curves;
}

}  // namespace moetune
