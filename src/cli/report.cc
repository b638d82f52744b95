// `moetune report TUNE.json`: a tune recorded with `moetune tune --json`,
// rendered again without measuring anything: its text, its report
// (`--report FILE.html|FILE.md`) or its configuration (`--emit FORMAT`).
#include "cli/command.h"
#include "cli/tune_output.h"
#include "tune/tune_reader.h"

namespace moetune {

void RegisterReportCommand(CLI::App& app, CommandRun* run) {
  struct Opts {
    std::string file;
    TuneOutputOptions out;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Render a recorded tune (moetune tune --json output) again: text, report, config");
  cmd->add_option("file", o->file, "The JSON that moetune tune --json wrote")->required();
  cmd->add_flag("--json", o->out.json, "Print the tune's JSON again (fields in docs/cli.md)");
  cmd->add_option("-o,--output", o->out.output, "Write to this file instead of stdout");
  AddTuneOutputOptions(cmd, &o->out.report, &o->out.emit);
  cmd->callback([o, run] {
    *run = [o]() -> int {
      auto t = ReadTuneReport(o->file);
      if (!t.ok()) return ReportError(t.error());
      return WriteTuneOutputs(*t, o->out, {o->file, t->model_path});
    };
  });
}

}  // namespace moetune
