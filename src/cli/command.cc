#include "cli/command.h"

#include <fmt/format.h>

#include <iostream>

#include "util/output_file.h"
#include "util/utf8.h"

namespace moetune {

int ReportError(const Error& error) {
  std::cerr << ForTerminal(
      fmt::format("moetune: error ({}): {}\n", ErrorKindName(error.kind()), error.message()));
  return kExitError;
}

Status WriteOutput(const std::string& path, const std::string& text,
                   const std::vector<std::string>& inputs) {
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
  return WriteFileSafely(path, safe, options);
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

}  // namespace moetune
