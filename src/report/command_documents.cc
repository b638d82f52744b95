#include "report/command_documents.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>

#include "config/flags.h"
#include "gguf/ggml_type.h"
#include "report/memory_figures.h"
#include "report/report_blocks.h"
#include "report/results_figure.h"
#include "util/units.h"

namespace moetune {
namespace {

std::string FileName(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.empty() ? path : name;
}

Section DecisionsSection(std::vector<DecisionRow> decisions,
                         const std::vector<std::string>& notes) {
  Section s{"decisions", "Decisions and the rules that made them", {}};
  s.blocks.push_back(DecisionTable{std::move(decisions)});
  if (!notes.empty()) {
    s.blocks.push_back(Paragraph{"Warnings and notes:"});
    s.blocks.push_back(BulletList{notes, true});
  }
  return s;
}

}  // namespace

std::vector<Section> AnalysisSections(const Analysis& a, std::optional<int64_t> target_ctx,
                                      const NCurveOptions& curve_options) {
  std::vector<Section> sections;
  Section curve{"n-curve", "Speed against N", {}};
  if (auto f = NCurveFigure(a, curve_options)) {
    curve.blocks.push_back(std::move(*f));
  } else {
    curve.blocks.push_back(Paragraph{"No results vary N, so there is no curve to read."});
  }
  sections.push_back(std::move(curve));
  if (auto f = DepthFigure(a, target_ctx)) {
    sections.push_back(Section{"depth", "Long context", {std::move(*f)}});
  }
  if (!a.comparisons.empty()) {
    Section s{"threads", "Threads and batch sizes", {}};
    int i = 0;
    for (const auto& c : a.comparisons) {
      s.blocks.push_back(ComparisonFigure(c, fmt::format("cmp{}", ++i)));
    }
    sections.push_back(std::move(s));
  }
  return sections;
}

Report AnalyzeDocument(const AnalysisReport& r, const std::vector<RunResult>& results,
                       const std::vector<std::string>& invocation) {
  const Analysis& a = r.analysis;
  Report doc;
  doc.title = "moetune analyze: " + (a.model.empty() ? std::string("results") : FileName(a.model));
  doc.subtitle = fmt::format(
      "{}; workload {} ({} prompt + {} answer "
      "tokens){}",
      ResultsOrigin(r), r.options.workload.name, r.options.workload.prompt_tokens,
      r.options.workload.answer_tokens,
      r.options.target_ctx ? fmt::format("; target context {}", *r.options.target_ctx) : "");
  doc.generator = GeneratorLine();
  const auto command = AnalysisServerCommand(a, results, r.options.target_ctx);
  doc.sections.push_back(Section{"verdict", "Verdict", {AnalysisVerdict(a, command)}});
  for (auto& s : AnalysisSections(a, r.options.target_ctx)) doc.sections.push_back(std::move(s));
  std::vector<std::string> notes = r.load_notes;
  notes.insert(notes.end(), a.notes.begin(), a.notes.end());
  doc.sections.push_back(DecisionsSection(AnalysisDecisions(a), notes));
  KeyValues inputs;
  inputs.items.push_back({"model", a.model.empty() ? "unknown" : a.model});
  inputs.items.push_back({"settings along the N curve", a.settings});
  for (const auto& f : r.files) {
    inputs.items.push_back({"file", fmt::format("{} ({}, {} result(s), {} skipped)", f.path,
                                                f.format, f.results, f.skipped)});
  }
  std::set<std::string> builds;
  for (const auto& x : results) {
    if (x.record.is_object() && x.record.contains("build_number") &&
        x.record["build_number"].is_number_integer())
      builds.insert(std::to_string(x.record["build_number"].get<int64_t>()));
  }
  for (const auto& b : builds) inputs.items.push_back({"llama.cpp build (from the results)", b});
  doc.sections.push_back(Section{"inputs", "Inputs", {inputs}});
  doc.sections.push_back(Section{"raw",
                                 "Raw measurements",
                                 {Collapsible{fmt::format("All {} result(s)", results.size()),
                                              RawMeasurementsTable(results), std::nullopt}}});
  std::vector<std::vector<std::string>> cmds = {invocation};
  if (!command.empty()) cmds.push_back(command);
  doc.sections.push_back(ReproduceSection(
      cmds,
      "The analysis, then the server command it recommends (the model path as recorded "
      "in the results)."));
  return doc;
}

namespace {

// The plan's verdict: the command of the pick and why, or what is short.
VerdictBlock PlanVerdict(const Plan& plan, const std::vector<std::string>& command) {
  const PlacementOption* best = plan.best();
  VerdictBlock v;
  if (best) {
    v.headline = plan.moe ? fmt::format("Start llama-server with -ngl 99 --n-cpu-moe {}{}",
                                        best->n_cpu_moe, plan.fine_filled() ? " and one -ot" : "")
                          : fmt::format("Start llama-server with -ngl {}", best->ngl);
    v.command = command;
    v.reason = fmt::format(
        "The smallest {} whose GPU total ({}) plus the {} safety margin fits the {} budget; {} of "
        "headroom beyond the margin.",
        plan.moe ? "N" : "offload", FormatBytes(Bytes(best->gpu.total())),
        FormatBytes(Bytes(plan.margin)), FormatBytes(Bytes(plan.budget)),
        FormatBytes(Bytes(best->headroom)));
    if (plan.moe && plan.smallest_fitting) {
      // One step toward the CPU: without the fine fill's -ot, or one more layer.
      const int n = plan.options[*plan.smallest_fitting].n_cpu_moe;
      const int safer = plan.fine_filled() ? n : n + 1;
      if (safer <= plan.n_layer)
        v.facts.push_back(fmt::format(
            "one step more conservative, if measurement shows the edge: --n-cpu-moe {}", safer));
    }
    v.facts.push_back(
        "planned from the model file, not measured: moetune bench or tune confirms it");
  } else {
    v.headline = "Nothing fits this GPU budget";
    v.reason = fmt::format("{} short for the least demanding placement. {}",
                           FormatBytes(Bytes(plan.shortfall)),
                           plan.notes.empty() ? "" : plan.notes.front());
  }
  return v;
}

// The plan's decisions: placement, fine fill, slots, fit, KV cache.
std::vector<DecisionRow> PlanDecisions(const Plan& plan, const PlanRequest& req) {
  const PlacementOption* best = plan.best();
  std::vector<DecisionRow> d;
  if (best) {
    d.push_back(
        {"placement",
         plan.moe ? FlagText(FlagId::kNCpuMoe, best->n_cpu_moe)
                  : FlagText(FlagId::kGpuLayers, best->ngl),
         "smallest that fits: GPU total + margin <= free VRAM - reserve",
         fmt::format("GPU {} + margin {} <= budget {}", FormatBytes(Bytes(best->gpu.total())),
                     FormatBytes(Bytes(plan.margin)), FormatBytes(Bytes(plan.budget)))});
  }
  if (plan.fine_filled()) {
    const WeightPlacement& wp = best->placement;
    d.push_back({"fine fill",
                 "-ot " + OverrideValue(wp.override_layer, wp.override_kinds) +
                     " with --n-cpu-moe " + std::to_string(best->n_cpu_moe),
                 "the headroom holds part of the next layer's experts",
                 fmt::format("{} more on the GPU", FormatBytes(Bytes(plan.gpu_bytes_gained)))});
  }
  d.push_back({"server slots", fmt::format("-np {}", std::max(1, req.ctx.n_seq)),
               "memory is planned for exactly these slots (llama-server's default is 4)", ""});
  d.push_back({"automatic fit", "-fit off",
               "the plan already fits; llama.cpp's --fit would move layers on its own", ""});
  d.push_back({"KV cache", GgmlTypeName(req.ctx.type_k) + "/" + GgmlTypeName(req.ctx.type_v),
               "as requested (--ctk/--ctv)", ""});
  return d;
}

// The memory of every placement, the pick and the rejected ones marked.
DocTable PlacementsTable(const Plan& plan) {
  DocTable all;
  all.header = {plan.moe ? "N" : "ngl", "GPU weights MiB", "KV MiB",   "state MiB", "compute MiB",
                "GPU total MiB",        "headroom MiB",    "host MiB", "fits"};
  all.numeric = {true, true, true, true, true, true, true, true, false};
  for (size_t i = 0; i < plan.options.size(); ++i) {
    const auto& o = plan.options[i];
    const bool pick = plan.smallest_fitting && *plan.smallest_fitting == i;
    auto mib = [](int64_t b) { return FormatMiB(Bytes(b), 1); };
    all.AddRow({std::to_string(plan.moe ? o.n_cpu_moe : o.ngl), mib(o.gpu.weights_total()),
                mib(o.gpu.kv), mib(o.gpu.state), mib(o.gpu.compute), mib(o.gpu.total()),
                mib(o.headroom), mib(o.host.total()), o.fits ? "yes" : "no"},
               pick     ? "pick"
               : o.fits ? ""
                        : "rejected");
  }
  return all;
}

}  // namespace

Report PlanDocument(const ModelInfo& m, const Plan& plan, const PlanRequest& req,
                    const PlanDocumentExtras& extras) {
  Report doc;
  doc.title = "moetune plan: " + FileName(m.path);
  doc.subtitle =
      fmt::format("{}, {} layers{}; context {}, {} free on the GPU, {} reserved", m.arch.hp.arch,
                  plan.n_layer, plan.moe ? ", MoE" : ", dense", req.ctx.n_ctx,
                  FormatBytes(Bytes(req.vram_free)), FormatBytes(Bytes(req.reserve)));
  doc.generator = GeneratorLine();
  const auto command = plan.config ? ServerArgv(*plan.config) : std::vector<std::string>{};
  const PlacementOption* best = plan.best();
  const VerdictBlock v = PlanVerdict(plan, command);
  doc.sections.push_back(Section{"verdict", "Verdict", {v}});
  if (best) {
    const std::string caption = fmt::format(
        "Where every byte of the pick goes. The GPU bar is as long as the free VRAM: the model's "
        "parts, then the {} margin, what is kept free (--reserve), and the headroom left "
        "({}). The host bar is as long as the available RAM.",
        FormatBytes(Bytes(plan.margin)), FormatBytes(Bytes(best->headroom)));
    doc.sections.push_back(
        Section{"memory",
                "Memory map of the pick",
                {MemoryMapFigure(PlacementMemoryRows(*best, BudgetOf(req)), "memmap", caption)}});
  }
  if (auto f = PlanOptionsFigure(plan, req)) {
    doc.sections.push_back(Section{"boundary", "GPU memory against N", {std::move(*f)}});
  }
  if (!extras.predicted.empty()) {
    Analysis none;
    NCurveOptions o;
    o.id = "predicted";
    o.predicted = extras.predicted;
    o.uncertainty = extras.uncertainty;
    if (best) none.recommendation.n_cpu_moe = best->n_cpu_moe;
    none.recommendation.measured = false;
    if (auto f = NCurveFigure(none, o))
      doc.sections.push_back(Section{"speed", "Predicted speed against N", {std::move(*f)}});
  }
  std::vector<DecisionRow> d = PlanDecisions(plan, req);
  doc.sections.push_back(DecisionsSection(std::move(d), plan.notes));
  KeyValues machine;
  machine.items = {
      {"free VRAM", FormatBytes(Bytes(req.vram_free))},
      {"reserved for other programs", FormatBytes(Bytes(req.reserve))},
      {"safety margin", FormatBytes(Bytes(plan.margin))},
      {"budget", FormatBytes(Bytes(plan.budget))},
      {"host RAM available",
       req.host_ram_available > 0 ? FormatBytes(Bytes(req.host_ram_available)) : "unknown"},
      {"host RAM needed",
       FormatBytes(Bytes(plan.host_ram_needed)) + (plan.host_ram_fits ? "" : " (does not fit)")}};
  Section ms{"machine", "Machine and engine", {machine}};
  if (extras.engine) {
    ms.blocks.push_back(EngineSummary(*extras.engine));
  } else {
    ms.blocks.push_back(Paragraph{"No llama.cpp engine was found; the plan does not need one."});
  }
  doc.sections.push_back(std::move(ms));
  const DocTable all = PlacementsTable(plan);
  doc.sections.push_back(Section{
      "raw", "Every placement", {Collapsible{"Memory of every placement", all, std::nullopt}}});
  if (command.empty()) {
    doc.sections.push_back(
        ReproduceSection({extras.invocation}, "The plan (nothing fits, so no server command)."));
  } else {
    doc.sections.push_back(ReproduceSection({extras.invocation, command},
                                            "The plan, then the server command it gives."));
  }
  return doc;
}

Report BenchDocument(const BenchRun& run, const Analysis& a, const EngineInfo& engine,
                     double wall_seconds, const std::vector<std::string>& invocation) {
  Report doc;
  const std::string model = run.results.empty() ? "" : run.results.front().config.model;
  doc.title = "moetune bench: " + (model.empty() ? std::string("results") : FileName(model));
  const int loads = run.TotalModelLoads();
  doc.subtitle = fmt::format(
      "{} configuration(s), {} failed; {} engine process(es), {} model "
      "load(s); {}",
      run.results.size(), run.FailureCount(), run.invocations.size(),
      loads < 0 ? std::string("uncounted") : std::to_string(loads), FormatSeconds(wall_seconds));
  doc.generator = GeneratorLine();
  // The fastest configuration of each test, for the verdict.
  VerdictBlock v;
  std::set<int> ns;
  for (const auto& r : run.results) ns.insert(r.config.placement.n_cpu_moe);
  if (ns.size() >= 2 && a.recommendation.n_cpu_moe) {
    v = AnalysisVerdict(a, AnalysisServerCommand(a, run.results, std::nullopt));
  } else {
    v.headline = run.FailureCount() == run.results.size() && !run.results.empty()
                     ? "Every configuration failed"
                     : "Fastest configuration of each test";
  }
  const auto labels = ConfigurationLabels(run.results);
  std::map<std::string, std::pair<double, std::string>> fastest;
  for (size_t i = 0; i < run.results.size(); ++i) {
    const auto& r = run.results[i];
    if (!r.ok() || r.samples_ts.empty()) continue;
    const double mean = Summarize(r.samples_ts).mean;
    auto& f = fastest[r.config.test_name()];
    if (mean > f.first) f = {mean, labels[i]};
  }
  for (const auto& [test, best] : fastest)
    v.facts.push_back(fmt::format("{}: {:.2f} t/s with {}", test, best.first, best.second));
  doc.sections.push_back(Section{"verdict", "Verdict", {v}});
  doc.sections.push_back(
      Section{"results", "Tokens/s of every configuration", {ResultsFigure(run.results)}});
  if (ns.size() >= 2 || !a.comparisons.empty()) {
    for (auto& s : AnalysisSections(a, std::nullopt)) doc.sections.push_back(std::move(s));
    // Keep the analysis's N curve only when N varies.
    if (ns.size() < 2) {
      for (auto it = doc.sections.begin(); it != doc.sections.end(); ++it) {
        if (it->id == "n-curve") {
          doc.sections.erase(it);
          break;
        }
      }
    }
  }
  std::vector<std::string> warnings;
  for (const auto& r : run.results) {
    if (!r.ok())
      warnings.push_back(
          fmt::format("{} {}: {} ({}): {}", r.config.test_name(), labels[&r - run.results.data()],
                      FailureKindName(r.failure->kind), r.failure->exit, r.failure->message));
  }
  doc.sections.push_back(DecisionsSection(AnalysisDecisions(a), warnings));
  Section es{"machine", "Engine", {EngineSummary(engine)}};
  if (!run.backends.empty())
    es.blocks.push_back(KeyValues{{{"backends used by the results", run.backends}}});
  doc.sections.push_back(std::move(es));
  std::string argvs;
  for (const auto& inv : run.invocations) argvs += ShellJoin(inv.argv) + "\n";
  doc.sections.push_back(
      Section{"raw",
              "Raw measurements",
              {Collapsible{fmt::format("All {} result(s)", run.results.size()),
                           RawMeasurementsTable(run.results), std::nullopt},
               Collapsible{"Engine command lines", std::nullopt, CodeBlock{"", argvs, false}}}});
  std::vector<std::vector<std::string>> cmds = {invocation};
  for (const auto& inv : run.invocations) cmds.push_back(inv.argv);
  doc.sections.push_back(
      ReproduceSection(cmds, "The benchmark, then each llama-bench process it started."));
  return doc;
}

}  // namespace moetune
