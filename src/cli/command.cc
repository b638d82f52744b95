#include "cli/command.h"

#include <fmt/format.h>

#include <iostream>

#include "util/output_file.h"

namespace moetune {

int ReportError(const Error& error) {
  std::cerr << fmt::format("moetune: error ({}): {}\n", ErrorKindName(error.kind()),
                           error.message());
  return kExitError;
}

Status WriteOutput(const std::string& path, const std::string& text,
                   const std::vector<std::string>& inputs) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) return Error(ErrorKind::kIo, "cannot write to standard output");
    return OkStatus();
  }
  OutputFileOptions options;
  options.inputs = inputs;
  return WriteFileSafely(path, text, options);
}

}  // namespace moetune
