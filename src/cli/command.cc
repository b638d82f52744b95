#include "cli/command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace moetune {

int ReportError(const Error& error) {
  std::cerr << fmt::format("moetune: error ({}): {}\n", ErrorKindName(error.kind()),
                           error.message());
  return kExitError;
}

Status WriteOutput(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    return OkStatus();
  }
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return Error(ErrorKind::kIo,
                   fmt::format("cannot write '{}'; check the folder exists and is writable", path));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Error(ErrorKind::kIo,
                 fmt::format("cannot rename output into '{}': {}", path, ec.message()));
  }
  return OkStatus();
}

}  // namespace moetune
