#include "report/tune_report.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "config/server_config_json.h"
#include "engine/result_json.h"
#include "plan/placement.h"
#include "report/analysis_report.h"
#include "report/verdict_text.h"
#include "util/table.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {
namespace {

using nlohmann::json;

json OptSeconds(const std::optional<double>& s) { return s ? json(*s) : json(nullptr); }

std::string Speedup(const std::optional<double>& tuned, const std::optional<double>& def,
                    const std::string& baseline = "llama.cpp's defaults") {
  if (!tuned || !def || !(*tuned > 0) || !(*def > 0) || !std::isfinite(*tuned) ||
      !std::isfinite(*def))
    return "not measured";
  return fmt::format("{:.2f} s vs {:.2f} s with {}: {:.2f}x", *tuned, *def, baseline,
                     *def / *tuned);
}

json DeviceJson(const DeviceBreakdown& d) {
  json roles = json::object();
  for (int r = 0; r < kTensorRoleCount; ++r) {
    if (d.weights[static_cast<size_t>(r)] != 0)
      roles[TensorRoleName(static_cast<TensorRole>(r))] = d.weights[static_cast<size_t>(r)];
  }
  return {{"weights", roles},           {"weights_bytes", d.weights_total()},
          {"kv_bytes", d.kv},           {"state_bytes", d.state},
          {"compute_bytes", d.compute}, {"total_bytes", d.total()}};
}

// The pick's safety verdict, with the sentence a person reads.
json PickSafetyJson(const PickSafety& s, int n_cpu_moe) {
  return {{"headroom", HeadroomStandingName(s.headroom)},
          {"headroom_bytes", s.headroom_bytes},
          {"margin_bytes", s.margin_bytes},
          {"proven_depth", s.proven_depth ? json(*s.proven_depth) : json(nullptr)},
          {"prefill_kept", s.prefill_kept ? json(*s.prefill_kept) : json(nullptr)},
          {"safe", s.safe()},
          {"text", PickSafetyText(s, n_cpu_moe)}};
}

// The pick against a baseline measured in the same run: the baseline's
// configuration, how it was found, and both times per request.
json VersusJson(const std::optional<DefaultsComparison>& versus) {
  if (!versus) return nullptr;
  const auto& v = *versus;
  json j = ServerConfigJson(v.defaults);
  auto speedup = [](const std::optional<double>& tuned, const std::optional<double>& baseline) {
    return tuned && baseline && *tuned > 0 ? json(*baseline / *tuned) : json(nullptr);
  };
  j.update(json{{"how", v.how},
                {"seconds_per_request_depth0",
                 {{"tuned", OptSeconds(v.tuned_seconds_depth0)},
                  {"defaults", OptSeconds(v.default_seconds_depth0)}}},
                {"seconds_per_request_at_ctx",
                 {{"tuned", OptSeconds(v.tuned_seconds_ctx)},
                  {"defaults", OptSeconds(v.default_seconds_ctx)}}},
                {"speedup_depth0", speedup(v.tuned_seconds_depth0, v.default_seconds_depth0)},
                {"speedup_at_ctx", speedup(v.tuned_seconds_ctx, v.default_seconds_ctx)},
                {"pick_versus", VersusName(v.pick)},
                {"compared_depth", v.compared_depth},
                {"requests_per_second",
                 {{"tuned", EstimateJson(v.tuned_objective)},
                  {"defaults", EstimateJson(v.default_objective)}}},
                {"note", v.note}});
  return j;
}

}  // namespace

json TuneJson(const TuneReport& t) {
  const TuneResult& r = t.result;
  json decisions = json::array();
  for (const auto& d : r.decisions) {
    json undecided = nullptr;
    if (d.undecided) {
      const Undecided& u = *d.undecided;
      undecided = {{"candidate", u.candidate}, {"measure", u.measure},         {"low_tps", u.low},
                   {"high_tps", u.high},       {"repetitions", u.repetitions}, {"kept", u.kept}};
    }
    decisions.push_back({{"phase", TunePhaseName(d.phase)},
                         {"choice", d.choice},
                         {"rule", DecisionRule(d)},
                         {"evidence", DecisionEvidence(d)},
                         {"undecided", undecided}});
  }
  json comparisons = json::array();
  for (const auto& c : r.comparisons) comparisons.push_back(ComparisonJson(c));
  json measurements = json::array();
  for (const auto& m : r.measurements) measurements.push_back(RunResultToJson(m));
  AnalysisReport ar;
  ar.analysis = r.analysis;
  ar.options.workload = t.workload;
  ar.options.target_ctx = t.ctx;
  ar.result_count = r.measurements.size();
  ar.source = "measured by this tune";
  // The pick: the whole configuration of the printed command.
  const json pick = ServerConfigJson(r.best);
  json memory = nullptr;
  if (r.memory) {
    memory = {{"gpu", DeviceJson(r.memory->gpu)},
              {"host", DeviceJson(r.memory->host)},
              {"headroom_bytes", r.memory->headroom},
              {"vram_budget_bytes", t.vram_budget},
              {"reserve_bytes", t.reserve}};
  }
  return {{"model", {{"path", t.model_path}, {"name", t.model_name}}},
          {"ctx", t.ctx},
          {"workload",
           {{"name", t.workload.name},
            {"prompt_tokens", t.workload.prompt_tokens},
            {"answer_tokens", t.workload.answer_tokens}}},
          {"engine", t.engine},
          {"simulated", t.simulated},
          {"machine", t.machine},
          {"checks", t.checks},
          {"command", t.Command()},
          {"pick", pick},
          {"placement_tuned", r.placement_tuned},
          {"memory", memory},
          {"pick_safety", PickSafetyJson(r.safety, r.best.placement.n_cpu_moe)},
          {"decisions", decisions},
          {"comparisons", comparisons},
          {"versus_defaults", VersusJson(r.versus_defaults)},
          {"defaults_chosen", r.defaults_chosen},
          {"versus_ollama", VersusJson(r.versus_ollama)},
          {"analysis", AnalysisJson(ar)},
          {"measurements", measurements},
          {"measured", r.measured},
          {"resumed", r.resumed},
          {"seconds", r.seconds},
          {"budget_exhausted", r.budget_exhausted},
          {"journal", t.journal},
          {"reproduce", t.reproduce},
          {"notes", r.notes}};
}

std::string SimulatedBanner(const TuneReport& t) {
  if (!t.simulated) return "";
  return "SIMULATED: measured on the simulated engine, not on this machine's GPU; run tune on "
         "the real engine before serving";
}

std::string TuneText(const TuneReport& t) {
  const TuneResult& r = t.result;
  std::string o;
  o += fmt::format("moetune tune: {} at {} tokens of context, {} workload ({}:{}){}\n",
                   ForTerminalField(t.model_name.empty() ? t.model_path : t.model_name), t.ctx,
                   ForTerminalField(t.workload.name), t.workload.prompt_tokens,
                   t.workload.answer_tokens, t.simulated ? "  [SIMULATED engine]" : "");
  o += fmt::format("Engine: {}\nMachine: {}\n", t.engine, t.machine);
  for (const auto& c : t.checks) o += "check: " + c + "\n";
  if (r.defaults_chosen) {
    o += "\nllama.cpp's defaults are the pick: the tuned settings were slower beyond the noise "
         "(the defaults decision below).\n";
  }
  // A simulated tune says so where the verdict is, not only in the header.
  if (t.simulated) o += "\n" + SimulatedBanner(t) + "\n";
  o += fmt::format("\nRun this{}:\n\n    {}\n\n", t.simulated ? " (SIMULATED)" : "",
                   ShellJoin(t.Command()));
  if (r.versus_defaults) {
    const auto& v = *r.versus_defaults;
    o += fmt::format("Time to answer one request at the full context: {}\n",
                     Speedup(v.tuned_seconds_ctx, v.default_seconds_ctx));
    o += fmt::format("Time to answer one request on an empty context: {}\n",
                     Speedup(v.tuned_seconds_depth0, v.default_seconds_depth0));
    o += fmt::format("(llama.cpp's defaults: {}; {})\n", v.how,
                     v.note.empty() ? "measured in the same run" : v.note);
  }
  if (r.versus_ollama) {
    const auto& v = *r.versus_ollama;
    o += fmt::format("Against Ollama's split of the same GPU, at the full context: {}\n",
                     Speedup(v.tuned_seconds_ctx, v.default_seconds_ctx, "Ollama's split"));
    o += fmt::format("Against Ollama's split, on an empty context: {}\n",
                     Speedup(v.tuned_seconds_depth0, v.default_seconds_depth0, "Ollama's split"));
    o += fmt::format("({}; {})\n", v.how, v.note.empty() ? "measured in the same run" : v.note);
  }
  if (r.memory) {
    o += fmt::format("GPU memory of the pick at {} tokens: {} of {}\n", t.ctx,
                     FormatBytes(Bytes(r.memory->gpu.total())), FormatBytes(Bytes(t.vram_budget)));
  }
  if (const std::string safety = PickSafetyText(r.safety, r.best.placement.n_cpu_moe);
      !safety.empty())
    o += "GPU safety of the pick: " + safety + "\n";
  o += "\nDecisions:\n\n";
  MarkdownTable dt({{"phase", MarkdownTable::Align::kLeft},
                    {"choice", MarkdownTable::Align::kLeft},
                    {"rule", MarkdownTable::Align::kLeft}});
  for (const auto& d : r.decisions) dt.AddRow({TunePhaseName(d.phase), d.choice, DecisionRule(d)});
  o += dt.Render();
  o += "\nEvidence:\n";
  for (const auto& d : r.decisions)
    o += fmt::format("- {}: {}\n", TunePhaseName(d.phase), DecisionEvidence(d));
  AnalysisReport ar;
  ar.analysis = r.analysis;
  ar.options.workload = t.workload;
  ar.options.target_ctx = t.ctx;
  ar.result_count = r.measurements.size();
  ar.source = "measured by this tune";
  if (r.placement_tuned && !r.analysis.curves.empty()) {
    o += "\nPlacement measurements (the curve and its reading):\n\n";
    o += AnalysisText(ar);
  }
  o += fmt::format("\n{} configuration(s) measured in {:.0f} s{}{}\n", r.measured, r.seconds,
                   r.resumed ? fmt::format(", {} taken from the journal", r.resumed) : "",
                   t.journal.empty() ? "" : fmt::format(" (journal: {})", t.journal));
  for (const auto& n : r.notes) o += "note: " + n + "\n";
  return o;
}

std::string TuneEngineVersion(const TuneReport& t) {
  // tune records "<llama-server --version line> at <folder>".
  constexpr std::string_view kVersion = "version: ";
  if (t.engine.rfind(kVersion, 0) != 0) return t.engine;
  std::string v = t.engine.substr(kVersion.size());
  if (const size_t at = v.find(" at "); at != std::string::npos) v.resize(at);
  return "llama.cpp " + v;
}

Result<std::string> TuneEmit(const TuneReport& t, EmitFormat format) {
  ServerConfig config = t.result.best;
  if (config.model.empty())
    return Error(ErrorKind::kInvalidArgument, "the tune gave no llama-server command to emit");
  // An absolute model path: the configuration is used from other folders.
  config.model = std::filesystem::absolute(config.model).lexically_normal().string();
  EmitContext ctx;
  ctx.header.push_back(fmt::format("llama-server configuration tuned by moetune {} for {}{}",
                                   MOETUNE_VERSION,
                                   std::filesystem::path(t.model_path).filename().string(),
                                   t.simulated ? " (SIMULATED engine: not measured here)" : ""));
  ctx.header.push_back("tuned with " + TuneEngineVersion(t));
  ctx.header.push_back(fmt::format(
      "context {}, {} workload ({} prompt + {} answer tokens){}", t.ctx, t.workload.name,
      t.workload.prompt_tokens, t.workload.answer_tokens,
      t.vram_budget > 0 ? fmt::format(", {} GPU budget", FormatBytes(Bytes(t.vram_budget))) : ""));
  ctx.header.push_back("machine: " + t.machine);
  ctx.gpu = t.vram_budget > 0 || t.result.placement_tuned;
  return EmitServerConfig(format, config, ctx);
}

}  // namespace moetune
