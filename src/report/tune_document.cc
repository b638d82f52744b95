#include "report/tune_document.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "config/flags.h"
#include "gguf/ggml_type.h"
#include "model/memory_map.h"
#include "report/command_documents.h"
#include "report/memory_figures.h"
#include "report/report_blocks.h"
#include "report/results_figure.h"
#include "report/verdict_text.h"
#include "util/units.h"

namespace moetune {
namespace {

constexpr const char* kTunedLabel = "tuned";
constexpr const char* kDefaultsLabel = "llama.cpp defaults";

std::string FileName(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.empty() ? path : name;
}

// What makes two configurations the same measured setting: everything but the
// test (depth, prompt, answer), its repetitions and what llama-bench does not take.
bool SameSetting(const ServerConfig& a, const ServerConfig& b) {
  return BenchPart(a) == BenchPart(b);
}

// A time that was not measured (or is no time: 0, infinite) is never "0.00 s".
std::string SecondsText(const std::optional<double>& s) {
  return s && std::isfinite(*s) && *s > 0 ? fmt::format("{:.2f} s", *s)
                                          : std::string("not measured");
}

// "1.42x" (defaults' time over the tuned time: how much faster the tune is).
std::optional<double> Speedup(const std::optional<double>& tuned,
                              const std::optional<double>& defaults) {
  if (!tuned || !defaults || *tuned <= 0 || *defaults <= 0) return std::nullopt;
  return *defaults / *tuned;
}

std::string PickFlags(const ServerConfig& b) {
  const int n = std::max(0, b.placement.n_cpu_moe);
  std::string f =
      fmt::format("{} {} {}",
                  b.placement.cpu_experts == CpuExpertsFrom::kLast
                      ? fmt::format("the last {} layers' experts on the CPU (-ot)", n)
                      : FlagText(FlagId::kNCpuMoe, n),
                  FlagText(FlagId::kThreads, b.threads), FlagText(FlagId::kUbatch, b.n_ubatch));
  if (b.type_k != ggml_type::kF16) f += " " + FlagText(FlagId::kCacheTypeK, GgmlTypeName(b.type_k));
  if (b.type_v != ggml_type::kF16) f += " " + FlagText(FlagId::kCacheTypeV, GgmlTypeName(b.type_v));
  if (b.load_mode != LoadMode::kDefault)
    f += " " + FlagText(FlagId::kLoadMode, LoadModeName(b.load_mode));
  return f;
}

const Decision* FindDecision(const TuneResult& r, TunePhase phase) {
  const Decision* found = nullptr;
  for (const auto& d : r.decisions) {
    if (d.phase == phase) found = &d;  // the last word of a phase
  }
  return found;
}

VerdictBlock Verdict(const TuneReport& t) {
  const TuneResult& r = t.result;
  VerdictBlock v;
  v.banner = SimulatedBanner(t);
  v.headline = (r.defaults_chosen
                    ? "Run llama-server with llama.cpp's defaults: the tuned settings were slower"
                    : "Run llama-server with " + PickFlags(r.best)) +
               (t.simulated ? " (SIMULATED)" : "");
  v.command = t.Command();
  const Decision* placement = FindDecision(r, TunePhase::kLongContext);
  if (placement == nullptr) placement = FindDecision(r, TunePhase::kPlacement);
  if (r.placement_tuned && r.analysis.recommendation.n_cpu_moe) {
    v.reason = RecommendationReason(r.analysis.recommendation);
    v.facts.push_back(std::string("placement rule: ") +
                      RecommendationRuleName(r.analysis.recommendation.rule));
  } else if (placement != nullptr) {
    v.reason = DecisionEvidence(*placement);
    v.facts.push_back("placement rule: " + placement->rule);
  }
  if (r.versus_defaults) {
    const auto& d = *r.versus_defaults;
    const bool deep = d.tuned_seconds_ctx && d.default_seconds_ctx;
    const auto x = deep ? Speedup(d.tuned_seconds_ctx, d.default_seconds_ctx)
                        : Speedup(d.tuned_seconds_depth0, d.default_seconds_depth0);
    if (x) {
      const std::string where =
          deep ? fmt::format("with the context filled to {} tokens", t.ctx) : "on an empty context";
      const std::string times =
          deep ? fmt::format("{} vs {} per request", SecondsText(d.tuned_seconds_ctx),
                             SecondsText(d.default_seconds_ctx))
               : fmt::format("{} vs {} per request", SecondsText(d.tuned_seconds_depth0),
                             SecondsText(d.default_seconds_depth0));
      v.speedup = *x >= 1 ? fmt::format(
                                "{:.2f}x faster than llama.cpp's defaults on the {} "
                                "workload {} ({})",
                                *x, t.workload.name, where, times)
                          : fmt::format(
                                "{:.2f}x the speed of llama.cpp's defaults on the {} "
                                "workload {} ({}): no faster, within what was measured",
                                *x, t.workload.name, where, times);
    } else if (!d.note.empty()) {
      v.facts.push_back("llama.cpp's defaults: " + d.note);
    }
  }
  if (r.safety.tight() || !r.safety.safe())
    v.facts.push_back("GPU safety: " + PickSafetyText(r.safety, r.best.placement.n_cpu_moe));
  if (!r.placement_tuned)
    v.facts.push_back("placement was not measured (see the decisions); N comes from the plan");
  if (r.budget_exhausted)
    v.facts.push_back("the time budget ran out: this is the best configuration so far");
  v.facts.push_back(fmt::format("{} configuration(s) measured in {}{}", r.measured,
                                FormatSeconds(r.seconds),
                                r.resumed ? fmt::format(", {} from the journal", r.resumed) : ""));
  return v;
}

// Time per request tuned and with a baseline, on an empty and a filled context.
DocTable VersusTable(const DefaultsComparison& d, int64_t ctx, const std::string& baseline) {
  DocTable table;
  table.header = {"context", "tuned", baseline, "speed-up"};
  table.numeric = {false, true, true, true};
  auto row = [&](const std::string& what, const std::optional<double>& tuned,
                 const std::optional<double>& def) {
    const auto x = Speedup(tuned, def);
    table.AddRow({what, SecondsText(tuned), SecondsText(def), x ? fmt::format("{:.2f}x", *x) : ""},
                 x && *x >= 1 ? "pick" : "");
  };
  row("empty", d.tuned_seconds_depth0, d.default_seconds_depth0);
  row(fmt::format("filled to {} tokens", ctx), d.tuned_seconds_ctx, d.default_seconds_ctx);
  return table;
}

// What moving from Ollama buys: its whole-layer split of the same GPU, measured alike.
Section VersusOllamaSection(const TuneReport& t) {
  Section s{"ollama", "Tuned against Ollama's split", {}};
  const auto& d = *t.result.versus_ollama;
  s.blocks.push_back(Paragraph{fmt::format(
      "Time to answer one request of the {} workload, tuned and with the split Ollama's "
      "automatic offload makes on this GPU ({}), measured in the same run. Ollama places whole "
      "layers and knows nothing of experts; the pick keeps the experts that do not fit in host "
      "memory instead.",
      t.workload.name, d.how)});
  s.blocks.push_back(VersusTable(d, t.ctx, "Ollama's split"));
  KeyValues settings;
  settings.items = {
      {"-ngl", fmt::format("{} tuned, {} by Ollama", t.result.best.placement.n_gpu_layers,
                           d.defaults.placement.n_gpu_layers)},
      {"--n-cpu-moe",
       fmt::format("{} tuned, none by Ollama", std::max(0, t.result.best.placement.n_cpu_moe))}};
  s.blocks.push_back(std::move(settings));
  if (!d.note.empty()) s.blocks.push_back(Paragraph{d.note});
  return s;
}

Section VersusDefaultsSection(const TuneReport& t) {
  Section s{"defaults", "Tuned against llama.cpp's defaults", {}};
  const auto& d = *t.result.versus_defaults;
  s.blocks.push_back(Paragraph{fmt::format(
      "Time to answer one request of the {} workload ({} prompt + {} answer tokens), tuned and "
      "with llama.cpp's own choice for this machine ({}), measured in the same run.",
      t.workload.name, t.workload.prompt_tokens, t.workload.answer_tokens, d.how)});
  s.blocks.push_back(VersusTable(d, t.ctx, "llama.cpp defaults"));
  const ServerConfig& b = t.result.best;
  const ServerConfig& o = d.defaults;
  KeyValues settings;
  settings.items = {// What each placed, not the bare --n-cpu-moe value: llama.cpp's fit keeps
                    // experts of the last layers on the CPU with -ot and no --n-cpu-moe at all.
                    {"experts on the CPU", fmt::format("{} tuned; {} by llama.cpp's defaults",
                                                       CpuExpertsText(b.placement),
                                                       CpuExpertsText(o.placement, "fit's -ot"))},
                    {"-t", fmt::format("{} tuned, {} by llama.cpp", b.threads, o.threads)},
                    {"-ub / -b", fmt::format("{} / {} tuned, {} / {} by llama.cpp", b.n_ubatch,
                                             b.n_batch, o.n_ubatch, o.n_batch)}};
  if (!o.placement.OverrideTensor().empty())
    settings.items.push_back({"llama.cpp's -ot", o.placement.OverrideTensor()});
  s.blocks.push_back(std::move(settings));
  const DefaultsMeasurements m = VersusDefaultsMeasurements(t);
  if (!m.results.empty()) {
    ResultsFigureOptions fo;
    fo.id = "versus";
    fo.title = "Tokens/s tuned and with llama.cpp's defaults";
    fo.labels = m.labels;
    fo.panel_height = 130;  // two points a panel: no need for the full height
    Figure f = ResultsFigure(m.results, fo);
    f.caption =
        "Tokens/s of the tuned configuration and of llama.cpp's defaults, one panel per test "
        "(prefill and decode, on an empty context and deep in it); bars are 95% confidence "
        "intervals of the mean.";
    s.blocks.push_back(std::move(f));
  }
  if (!d.note.empty()) s.blocks.push_back(Paragraph{d.note});
  return s;
}

Section MemorySection(const TuneReport& t) {
  const PlacementOption& o = *t.result.memory;
  // The plan's margin is what the headroom leaves out of the budget.
  MemoryBudget budget;
  budget.reserve = t.reserve;
  budget.vram_free = t.vram_budget + t.reserve;
  budget.margin = std::max<int64_t>(0, t.vram_budget - o.headroom - o.gpu.total());
  // The map is the pick's own: planned from the model file for its placement,
  // micro-batch, KV cache type and flash attention (tune/tuner.h TuneResult::memory).
  const ServerConfig& b = t.result.best;
  const std::string caption = fmt::format(
      "Where every byte of the pick (--n-cpu-moe {}) goes at {} tokens of context, as planned "
      "from the model file for the pick's own settings (micro-batch {}, {} KV cache, flash "
      "attention {}). The GPU bar is as long as the free VRAM: the model's parts, then the {} "
      "margin, what is kept free (--reserve), and the headroom left ({}).",
      o.n_cpu_moe, t.ctx, b.n_ubatch, GgmlTypeName(b.type_k),
      b.flash_attn == FlashAttn::kOff ? "off" : "on", FormatBytes(Bytes(budget.margin)),
      FormatBytes(Bytes(o.headroom)));
  std::vector<DocBlock> blocks = {
      MemoryMapFigure(PlacementMemoryRows(o, budget), "memmap", caption)};
  if (const std::string safety = PickSafetyText(t.result.safety, b.placement.n_cpu_moe);
      !safety.empty())
    blocks.push_back(Paragraph{"GPU safety of the pick: " + safety + "."});
  return Section{"memory", "Memory map of the pick", std::move(blocks)};
}

std::vector<DecisionRow> Decisions(const TuneReport& t) {
  std::vector<DecisionRow> rows;
  for (const auto& d : t.result.decisions)
    rows.push_back({TunePhaseName(d.phase), d.choice, DecisionRule(d), DecisionEvidence(d)});
  if (!t.result.placement_tuned) return rows;
  // The reading of the curve behind the placement: cliffs, rejections, collapses.
  for (auto& d : CurveReadingDecisions(t.result.analysis)) rows.push_back(std::move(d));
  return rows;
}

Section MachineSection(const TuneReport& t) {
  KeyValues kv;
  kv.items.push_back({"engine", t.engine + (t.simulated ? " (SIMULATED)" : "")});
  kv.items.push_back({"machine", t.machine});
  kv.items.push_back(
      {"model", t.model_path + (t.model_name.empty() ? "" : " (" + t.model_name + ")")});
  kv.items.push_back({"context", std::to_string(t.ctx)});
  kv.items.push_back({"workload", fmt::format("{} ({} prompt + {} answer tokens)", t.workload.name,
                                              t.workload.prompt_tokens, t.workload.answer_tokens)});
  if (t.vram_budget > 0) {
    kv.items.push_back({"GPU budget", fmt::format("{} (free VRAM minus {} reserved)",
                                                  FormatBytes(Bytes(t.vram_budget)),
                                                  FormatBytes(Bytes(t.reserve)))});
  } else {
    kv.items.push_back({"GPU budget", "none known (no GPU found and no --vram)"});
  }
  kv.items.push_back({"journal", t.journal.empty() ? "none" : t.journal});
  kv.items.push_back(
      {"measured", fmt::format("{} configuration(s) in {}, {} from the journal{}",
                               t.result.measured, FormatSeconds(t.result.seconds), t.result.resumed,
                               t.result.budget_exhausted ? "; the budget ran out" : "")});
  Section s{"machine", "Machine and engine", {std::move(kv)}};
  if (!t.checks.empty()) {
    s.blocks.push_back(Paragraph{"Warnings from the machine and engine checks:"});
    s.blocks.push_back(BulletList{t.checks, true});
  }
  return s;
}

Section Reproduce(const TuneReport& t, const std::vector<std::string>& invocation) {
  Section s{"reproduce", "How to reproduce", {}};
  s.blocks.push_back(Paragraph{
      "The tune (with the same journal, a second run takes every measurement from it), then "
      "the server command it recommends."});
  for (const auto& r : t.reproduce) s.blocks.push_back(CodeBlock{"", r, true});
  if (t.reproduce.empty() && !invocation.empty())
    s.blocks.push_back(CodeBlock{"", ShellJoin(invocation), true});
  if (const auto command = t.Command(); !command.empty())
    s.blocks.push_back(CodeBlock{"", ShellJoin(command), true});
  if (!invocation.empty() && !t.reproduce.empty()) {
    s.blocks.push_back(Paragraph{"This report was written by:"});
    s.blocks.push_back(CodeBlock{"", ShellJoin(invocation), true});
  }
  return s;
}

}  // namespace

DefaultsMeasurements VersusDefaultsMeasurements(const TuneReport& t) {
  DefaultsMeasurements out;
  const TuneResult& r = t.result;
  if (!r.versus_defaults) return out;
  const ServerConfig& tuned = r.best;
  const ServerConfig& defaults = r.versus_defaults->defaults;
  const bool same = SameSetting(tuned, defaults);
  // The comparison ran last: per test, the last result of each setting (when
  // both are the same setting, the defaults ran just before the tuned one).
  std::vector<std::string> tests;
  std::map<std::string, std::vector<size_t>> by_test;
  for (size_t i = 0; i < r.measurements.size(); ++i) {
    const RunConfig& c = r.measurements[i].config;
    if (!SameSetting(c, tuned) && !SameSetting(c, defaults)) continue;
    if (!by_test.count(c.test_name())) tests.push_back(c.test_name());
    by_test[c.test_name()].push_back(i);
  }
  for (const auto& test : tests) {
    const auto& idx = by_test[test];
    std::optional<size_t> d, u;
    for (auto it = idx.rbegin(); it != idx.rend(); ++it) {
      const RunConfig& c = r.measurements[*it].config;
      if (same) {
        if (!u) {
          u = *it;
        } else if (!d) {
          d = *it;
        }
      } else {
        if (!u && SameSetting(c, tuned)) u = *it;
        if (!d && SameSetting(c, defaults)) d = *it;
      }
    }
    // Only tests measured for both settings compare them.
    if (!d || !u) continue;
    out.results.push_back(r.measurements[*d]);
    out.labels.push_back(kDefaultsLabel);
    out.results.push_back(r.measurements[*u]);
    out.labels.push_back(kTunedLabel);
  }
  return out;
}

Report TuneDocument(const TuneReport& t, const std::vector<std::string>& invocation) {
  const TuneResult& r = t.result;
  Report doc;
  doc.title = std::string(t.simulated ? "moetune tune (SIMULATED): " : "moetune tune: ") +
              FileName(t.model_path);
  doc.subtitle = fmt::format(
      "{}context {}, {} workload ({} prompt + {} answer tokens); {} configuration(s) measured{}",
      t.model_name.empty() ? "" : t.model_name + "; ", t.ctx, t.workload.name,
      t.workload.prompt_tokens, t.workload.answer_tokens, r.measured + r.resumed,
      t.simulated ? "; SIMULATED engine" : "");
  doc.generator = GeneratorLine();
  doc.sections.push_back(Section{"verdict", "Verdict", {Verdict(t)}});
  Analysis a = r.analysis;
  a.comparisons = r.comparisons;
  for (auto& s : AnalysisSections(a, t.ctx)) {
    if (s.id == "n-curve" && !r.placement_tuned) {
      const Decision* d = FindDecision(r, TunePhase::kPlacement);
      s.blocks = {Paragraph{"Placement was not measured: " +
                            (d ? DecisionEvidence(*d) : std::string("see the decisions")) + "."}};
    }
    doc.sections.push_back(std::move(s));
  }
  if (t.result.memory) doc.sections.push_back(MemorySection(t));
  if (r.versus_defaults) doc.sections.push_back(VersusDefaultsSection(t));
  if (r.versus_ollama) doc.sections.push_back(VersusOllamaSection(t));
  std::vector<std::string> notes = t.checks;
  notes.insert(notes.end(), r.notes.begin(), r.notes.end());
  notes.insert(notes.end(), r.analysis.notes.begin(), r.analysis.notes.end());
  Section decisions{"decisions", "Decisions and the rules that made them", {}};
  decisions.blocks.push_back(DecisionTable{Decisions(t)});
  if (!notes.empty()) {
    decisions.blocks.push_back(Paragraph{"Warnings and notes:"});
    decisions.blocks.push_back(BulletList{notes, true});
  }
  doc.sections.push_back(std::move(decisions));
  doc.sections.push_back(MachineSection(t));
  doc.sections.push_back(
      Section{"raw",
              "Raw measurements",
              {Collapsible{fmt::format("All {} result(s)", r.measurements.size()),
                           RawMeasurementsTable(r.measurements), std::nullopt}}});
  doc.sections.push_back(Reproduce(t, invocation));
  return doc;
}

}  // namespace moetune
