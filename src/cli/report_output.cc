#include "cli/report_output.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>

#include "cli/command.h"
#include "report/emit.h"
#include "util/utf8.h"

namespace moetune {

CLI::Validator ReportPathValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto f = ReportFormatForPath(value);
        return f.ok() ? std::string() : f.error().message();
      },
      "FILE.html|FILE.md");
}

CLI::Validator EmitFormatValidator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto f = ParseEmitFormat(value);
        return f.ok() ? std::string() : f.error().message();
      },
      [] {
        std::string names;
        for (EmitFormat f : EmitFormats())
          names += std::string(names.empty() ? "" : "|") + EmitFormatName(f);
        return names;
      }());
}

std::vector<std::string> OwnCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::string cur;
  for (char c : raw) {
    if (c == '\0') {
      argv.push_back(ToValidUtf8(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (argv.empty()) return {"moetune"};
  argv[0] = "moetune";  // however it was started, the reader runs "moetune"
  return argv;
}

Status WriteReportFile(const std::string& path, const Report& report,
                       const std::vector<std::string>& inputs) {
  MOETUNE_ASSIGN_OR_RETURN(ReportFormat format, ReportFormatForPath(path));
  MOETUNE_TRY(WriteOutput(path, RenderReport(report, format), inputs, "--report"));
  std::cerr << ForTerminal(fmt::format("moetune: report written to {}\n", path));
  return OkStatus();
}

}  // namespace moetune
