#include "util/cache_dir.h"

#include <cstdlib>
#include <filesystem>

namespace moetune {

std::string MoetuneCacheDir() {
  namespace fs = std::filesystem;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') {
    return (fs::path(x) / "moetune").string();
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return (fs::path(h) / ".cache" / "moetune").string();
  }
  return "";
}

}  // namespace moetune
