#pragma once
/// A temporary folder for unit tests, removed with everything in it. Header-only,
/// used only by *_test.cc files.

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace moetune::testing {

/// mkdtemp under /tmp; path() is empty if it could not be made.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/moetune_test_XXXXXX";
    path_ = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace moetune::testing
