#include "cli/model_argument.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <iostream>

#include "store/reference.h"
#include "util/utf8.h"

namespace moetune {

CommandRun WithModel(std::string* model, CommandRun run) {
  return [model, run = std::move(run)]() -> int {
    auto resolved = ResolveModelArgument(*model, StoreEnvironment::Current());
    if (!resolved.ok()) return ReportError(resolved.error());
    if (resolved->model) {
      std::cerr << ForTerminal(fmt::format("moetune: {} is {}\n", *model, resolved->path));
    }
    *model = resolved->path;
    return run();
  };
}

CLI::Validator ExistingModel() {
  return CLI::Validator(
      [](const std::string& value) -> std::string {
        struct stat st {};
        if (::stat(value.c_str(), &st) == 0) return "";
        if (auto ref = ParseModelReference(value)) return ref->ok() ? "" : ref->error().message();
        // A missing path: the resolver's own words (a hint when it looks like
        // a model's name), else CLI11's.
        auto r = ResolveModelArgument(value, StoreEnvironment::Current());
        return r.ok() ? "File does not exist: " + value : r.error().message();
      },
      "MODEL");
}

}  // namespace moetune
