#include "report/report_blocks.h"

#include <fmt/format.h>

#include <ctime>

#include "config/flags.h"
#include "plan/placement.h"
#include "report/verdict_text.h"
#include "stats/interval.h"
#include "tune/measurements.h"
#include "tune/slice.h"

namespace moetune {
namespace {

// A result measured with the settings held fixed along the N curve, as the
// analysis chose them (tune/slice.h CurveKey).
const RunResult* CurveSample(const std::vector<RunResult>& results, const std::string& model) {
  std::vector<const RunResult*> rs;
  for (const auto& r : results) {
    if (model.empty() || r.config.model == model) rs.push_back(&r);
  }
  if (rs.empty()) return nullptr;
  const SettingsKey key = CurveKey(rs);
  for (const RunResult* r : rs) {
    if (KeyOf(r->config) == key) return r;
  }
  return nullptr;
}

std::string Samples(const std::vector<double>& s) {
  std::string out;
  for (double v : s) out += fmt::format("{}{:.2f}", out.empty() ? "" : " ", v);
  return out;
}

}  // namespace

std::vector<std::string> AnalysisServerCommand(const Analysis& a,
                                               const std::vector<RunResult>& results,
                                               std::optional<int64_t> target_ctx) {
  const auto& rec = a.recommendation;
  if (!rec.n_cpu_moe) return {};
  const RunResult* sample = CurveSample(results, a.model);
  // The measured settings, with what the analysis recommends.
  ServerConfig c = BenchPart(sample ? sample->config : RunConfig{});
  c.model = a.model.empty() ? "MODEL.gguf" : a.model;
  c.placement.n_cpu_moe = *rec.n_cpu_moe;
  if (rec.threads) c.threads = *rec.threads;
  if (rec.n_ubatch) c.n_ubatch = *rec.n_ubatch;
  c.n_batch = std::max(c.n_batch, c.n_ubatch);
  if (target_ctx) c.ctx_size = *target_ctx;
  return ServerArgv(c);
}

VerdictBlock AnalysisVerdict(const Analysis& a, const std::vector<std::string>& command) {
  const auto& rec = a.recommendation;
  VerdictBlock v;
  if (rec.n_cpu_moe) {
    std::string flags = FlagText(FlagId::kNCpuMoe, *rec.n_cpu_moe);
    if (rec.threads) flags += " " + FlagText(FlagId::kThreads, *rec.threads);
    if (rec.n_ubatch) flags += " " + FlagText(FlagId::kUbatch, *rec.n_ubatch);
    v.headline = "Run llama-server with " + flags;
    v.command = command;
  } else {
    v.headline = "No recommendation";
  }
  v.reason = RecommendationReason(rec);
  v.facts.push_back(std::string("rule: ") + RecommendationRuleName(rec.rule));
  if (rec.n_cpu_moe && !rec.measured)
    v.facts.push_back("this N was not measured: the rule implies it (measure it to confirm)");
  if (rec.edge >= 0)
    v.facts.push_back(fmt::format("the edge (most aggressive N tied with the best): {}", rec.edge));
  return v;
}

std::vector<DecisionRow> CurveReadingDecisions(const Analysis& a) {
  std::vector<DecisionRow> out;
  for (const auto& c : a.cliffs) {
    out.push_back({"cliff",
                   fmt::format("between N={} and N={}", c.n_cpu_moe_safe, c.n_cpu_moe_collapsed),
                   CliffRuleText(), fmt::format("prefill ratio {:.2f}", c.prefill_ratio)});
  }
  for (const auto& r : a.rejected) {
    out.push_back({"rejected", fmt::format("N={}", r.n_cpu_moe), "rejection", RejectionReason(r)});
  }
  for (const auto& d : a.depth_checks) {
    if (!d.collapsed) continue;
    out.push_back({"collapse with depth", fmt::format("N={} at depth {}", d.n_cpu_moe, d.depth),
                   CollapseRuleText(),
                   fmt::format("ratio {:.2f} vs {:.2f}", d.ratio, d.reference_ratio)});
  }
  return out;
}

std::vector<DecisionRow> AnalysisDecisions(const Analysis& a) {
  std::vector<DecisionRow> out;
  const auto& rec = a.recommendation;
  out.push_back({"placement", rec.n_cpu_moe ? FlagText(FlagId::kNCpuMoe, *rec.n_cpu_moe) : "none",
                 RecommendationRuleName(rec.rule), RecommendationReason(rec)});
  out.push_back({"curve shape", CurveShapeName(a.shape),
                 "cliff / flat / monotonic / peak, read from prefill (docs/method.md)",
                 a.settings.empty() ? "" : "settings: " + a.settings});
  for (auto& row : CurveReadingDecisions(a)) out.push_back(std::move(row));
  for (const auto& c : a.comparisons) {
    out.push_back({DimensionName(c.dimension), std::to_string(c.chosen),
                   "intervals compared; a tie goes to the smaller value",
                   fmt::format("at N={}: {}", c.n_cpu_moe, ComparisonReason(c))});
  }
  return out;
}

std::string EngineVersionText(const EngineInfo& e) {
  std::string v = e.version_line;
  if (v.rfind("version: ", 0) == 0) v = v.substr(9);
  return v.empty() ? "llama.cpp, version unknown" : "llama.cpp " + v;
}

KeyValues EngineSummary(const EngineInfo& e) {
  KeyValues kv;
  kv.items.push_back({"engine", e.dir.empty() ? "(not found)" : e.dir + " (" + e.origin + ")"});
  kv.items.push_back({"version", EngineVersionText(e)});
  if (!e.built_with.empty()) kv.items.push_back({"built with", e.built_with});
  std::string backends;
  for (const auto& b : e.backends) backends += (backends.empty() ? "" : ", ") + b;
  if (!backends.empty() && e.backend_source != BackendSource::kUnknown) {
    backends += fmt::format(" ({})", BackendSourceName(e.backend_source));
  }
  kv.items.push_back({"backends", backends.empty() ? "unknown" : backends});
  if (e.devices.empty()) {
    kv.items.push_back({"devices", "none besides the CPU (placement cannot change speed)"});
  }
  for (const auto& d : e.devices) {
    std::string mem;
    if (d.total) mem = ", " + FormatBytes(*d.total) + " total";
    if (d.free) mem += ", " + FormatBytes(*d.free) + " free";
    kv.items.push_back({"device " + d.name, d.description + mem});
  }
  return kv;
}

namespace {

// Ascending layers as ranges: "0-12", "3, 5-7".
std::string LayerRanges(const std::vector<int>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(layers[i]);
    if (j > i) out += "-" + std::to_string(layers[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string CpuExpertsText(const Placement& p, const std::string& ot_source) {
  const CpuExperts e = CpuExpertsOf(p);
  std::string out;
  const int written = p.WrittenNCpuMoe();
  if (e.all) {
    out = "every layer (--cpu-moe)";
  } else if (e.layers.empty()) {
    out = "none";
  } else {
    std::string source = written > 0 ? FlagText(FlagId::kNCpuMoe, written) : "";
    if (e.from_ot) source += (source.empty() ? "" : " and ") + ot_source;
    out = fmt::format("{} {} ({})", e.layers.size() == 1 ? "layer" : "layers",
                      LayerRanges(e.layers), source);
  }
  if (!e.partial.empty()) {
    out += fmt::format("; part of {} {} (-ot)", e.partial.size() == 1 ? "layer" : "layers",
                       LayerRanges(e.partial));
  }
  if (!e.unread.empty()) {
    out += fmt::format("; {} other -ot rule{}", e.unread.size(), e.unread.size() == 1 ? "" : "s");
  }
  return out;
}

DocTable RawMeasurementsTable(const std::vector<RunResult>& results) {
  DocTable t;
  t.header = {"#",  "model", "test",          "N", "ngl",         "threads", "ub", "b",
              "fa", "KV",    "t/s mean ± sd", "n", "samples t/s", "status"};
  t.numeric = {true, false, false, true, true, true,  true,
               true, false, false, true, true, false, false};
  int i = 0;
  for (const auto& r : results) {
    const auto& c = r.config;
    std::string value, n, samples, status;
    if (r.ok()) {
      const Summary s = ResultStats(r);
      value = FormatMeanSd(s, 2);
      n = std::to_string(s.n);
      samples = Samples(r.samples_ts);
    } else {
      status = fmt::format("failed ({}): {}", FailureKindName(r.failure->kind), r.failure->message);
    }
    t.AddRow({std::to_string(++i), c.model, c.test_name(), std::to_string(c.placement.n_cpu_moe),
              std::to_string(c.placement.n_gpu_layers), std::to_string(c.threads),
              std::to_string(c.n_ubatch), std::to_string(c.n_batch), FlashAttnName(c.flash_attn),
              GgmlTypeName(c.type_k) + "/" + GgmlTypeName(c.type_v), value, n, samples, status},
             r.ok() ? "" : "failed");
  }
  return t;
}

Section ReproduceSection(const std::vector<std::vector<std::string>>& commands,
                         const std::string& note) {
  Section s{"reproduce", "How to reproduce", {}};
  if (!note.empty()) s.blocks.push_back(Paragraph{note});
  for (const auto& c : commands) {
    if (!c.empty()) s.blocks.push_back(CodeBlock{"", ShellJoin(c), true});
  }
  return s;
}

std::string GeneratorLine() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
  return fmt::format("moetune {} on {}", MOETUNE_VERSION, when);
}

}  // namespace moetune
