#include "cli/command.h"

#include <fmt/format.h>

#include <iostream>

#include "report/bench_report.h"
#include "util/command_files.h"
#include "util/output_file.h"
#include "util/utf8.h"

namespace moetune {

int ReportError(const Error& error) {
  std::cerr << ForTerminal(
      fmt::format("moetune: error ({}): {}\n", ErrorKindName(error.kind()), error.message()));
  return kExitError;
}

Status WriteOutput(const std::string& path, const std::string& text,
                   const std::vector<std::string>& inputs, std::string_view role) {
  // Text from model files and the engine may hold control bytes or invalid
  // UTF-8: neither reaches a terminal or a report (util/text.h).
  const std::string safe = ForTerminal(text);
  if (path.empty() || path == "-") {
    std::cout << safe;
    std::cout.flush();
    if (!std::cout) return Error(ErrorKind::kIo, "cannot write to standard output");
    return OkStatus();
  }
  OutputFileOptions options;
  options.inputs = inputs;
  options.role = std::string(role);
  return WriteFileSafely(path, safe, options);
}

Status ClaimOutputFlags(const CLI::App& app) {
  // The flags that name a file the command writes, and the role each is
  // claimed under (the name messages use). `--profile` is an output only for
  // doctor: elsewhere it names a profile to read.
  struct OutputFlag {
    const char* command;  // nullptr: every command
    const char* option;
    const char* role;
  };
  static constexpr OutputFlag kFlags[] = {{nullptr, "--output", "-o"},
                                          {nullptr, "--report", "--report"},
                                          {"tune", "--journal", "--journal"},
                                          {"doctor", "--profile", "--profile"},
                                          {"serve", "--server-log", "--server-log"}};
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const OutputFlag& f : kFlags) {
      if (f.command != nullptr && sub->get_name() != f.command) continue;
      const CLI::Option* opt = sub->get_option_no_throw(f.option);
      if (opt == nullptr || opt->count() == 0) continue;
      for (const std::string& path : opt->results()) MOETUNE_TRY(ClaimOutputFile(path, f.role));
    }
  }
  return OkStatus();
}

std::string JsonOutput(const nlohmann::json& j) {
  bool replaced = false;
  std::string text = DumpJson(j, 2, &replaced) + "\n";
  if (replaced) {
    std::cerr << "moetune: note: some text (from the model file, a file name or the engine) is not "
                 "valid UTF-8; the JSON shows those bytes as U+FFFD\n";
  }
  return text;
}

std::string InvocationLines(const LlamaBenchEngine& bench, const std::vector<RunConfig>& configs) {
  std::string lines;
  for (const auto& inv : bench.PlanInvocations(configs)) {
    std::string line;
    for (const auto& arg : inv.argv) line += (line.empty() ? "" : " ") + arg;
    lines += line + "\n";
  }
  return lines;
}

ProgressCallback TerminalProgress() {
  return [](const BenchProgress& p) {
    std::cerr << "\r\033[K" << ForTerminal(FormatProgressLine(p)) << std::flush;
  };
}

}  // namespace moetune
