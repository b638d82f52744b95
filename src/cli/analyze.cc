// `moetune analyze FILE...`: the method's reading rules applied to llama-bench
// results (or moetune bench/tune output) measured anywhere.
#include "cli/command.h"
#include "cli/report_output.h"
#include "cli/validators.h"
#include "report/analysis_report.h"
#include "report/command_documents.h"
#include "report/sparkline.h"
#include "tune/analysis.h"
#include "tune/measurements.h"
#include "util/units.h"

namespace moetune {

void RegisterAnalyzeCommand(CLI::App& app, CommandRun* run) {
  struct Opts {
    std::vector<std::string> files;
    std::string ctx;
    std::string workload = "chat";
    bool json = false;
    std::string output;
    std::string report;
    bool ascii = false;
    bool proven_edge = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "analyze", "Read llama-bench sweeps (or moetune bench/tune output): curve, cliffs, pick");
  cmd->add_option("files", o->files,
                  "llama-bench output (-o jsonl or -o json) or moetune bench/tune JSON; several "
                  "files are merged")
      ->required();
  cmd->add_option("--ctx,-c", o->ctx,
                  "Target context: depth measurements up to it decide collapse (e.g. 32K)")
      ->check(TokenCount(1, int64_t{1} << 24));
  cmd->add_option("--workload", o->workload,
                  "chat (1024:384), agent (8192:256) or PROMPT:ANSWER tokens; decides between "
                  "prefill and decode")
      ->check(WorkloadName())
      ->capture_default_str();
  cmd->add_flag("--proven-edge", o->proven_edge,
                "Take the edge when it was measured healthy at the target context (--ctx) instead "
                "of one layer more conservative (the output says what the step back costs)");
  cmd->add_flag("--json", o->json, "Print JSON (fields in docs/cli.md)");
  cmd->add_option("-o,--output", o->output, "Write to this file instead of stdout");
  cmd->add_option("--report", o->report,
                  "Also write a report: FILE.html (self-contained, with charts) or FILE.md")
      ->check(ReportPathValidator());
  cmd->add_flag("--ascii", o->ascii,
                "Sparklines and bars in ASCII (default: Unicode when the locale is UTF-8)");
  cmd->callback([o, run] {
    *run = [o]() -> int {
      AnalysisReport report;
      report.options.workload = *ParseWorkload(o->workload);  // validated
      if (!o->ctx.empty()) report.options.target_ctx = *ParseTokenCount(o->ctx);
      report.options.take_proven_edge = o->proven_edge;
      auto loaded = LoadMeasurements(o->files);
      if (!loaded.ok()) return ReportError(loaded.error());
      report.files = loaded->files;
      report.load_notes = loaded->notes;
      report.result_count = loaded->results.size();
      report.analysis = Analyze(loaded->results, report.options);
      report.sketch = TerminalGlyphs(o->ascii);
      if (!o->report.empty()) {
        auto st = WriteReportFile(
            o->report, AnalyzeDocument(report, loaded->results, OwnCommandLine()), o->files);
        if (!st.ok()) return ReportError(st.error());
      }
      const std::string text = o->json ? JsonOutput(AnalysisJson(report)) : AnalysisText(report);
      auto st = WriteOutput(o->output, text, o->files);
      return st.ok() ? kExitOk : ReportError(st.error());
    };
  });
}

}  // namespace moetune
