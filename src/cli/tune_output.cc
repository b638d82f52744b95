#include "cli/tune_output.h"

#include "cli/command.h"
#include "cli/report_output.h"
#include "report/emit.h"
#include "report/tune_document.h"

namespace moetune {

void AddTuneOutputOptions(CLI::App* cmd, std::string* report, std::string* emit) {
  cmd->add_option("--report", *report,
                  "Also write a report: FILE.html (self-contained, with charts) or FILE.md")
      ->check(ReportPathValidator());
  cmd->add_option(
         "--emit", *emit,
         "Print the tuned llama-server configuration instead of the table: " + EmitFormatList())
      ->check(EmitFormatValidator())
      ->excludes(cmd->get_option("--json"));
}

int WriteTuneOutputs(const TuneReport& report, const TuneOutputOptions& o,
                     const std::vector<std::string>& inputs) {
  if (!o.report.empty()) {
    auto st = WriteReportFile(o.report, TuneDocument(report, OwnCommandLine()), inputs);
    if (!st.ok()) return ReportError(st.error());
  }
  std::string text;
  if (!o.emit.empty()) {
    auto format = ParseEmitFormat(o.emit);  // validated by the option
    if (!format.ok()) return ReportError(format.error());
    auto e = TuneEmit(report, *format);
    if (!e.ok()) {
      Error error = e.error();
      if (!report.journal.empty())
        error = Error(error.kind(), error.message() + " (the measurements are in the journal " +
                                        report.journal +
                                        ": the same command with another --emit measures "
                                        "nothing again)");
      return ReportError(error);
    }
    text = *e;
  } else {
    text = o.json ? JsonOutput(TuneJson(report)) : TuneText(report);
  }
  auto st = WriteOutput(o.output, text, inputs);
  return st.ok() ? kExitOk : ReportError(st.error());
}

}  // namespace moetune
