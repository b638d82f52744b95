#include "util/cache_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

namespace moetune {
namespace {

// Sets (or unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CacheDir, XdgFirstThenHomeThenNone) {
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/x/cache");
    EXPECT_EQ(MoetuneCacheDir(), "/x/cache/moetune");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "");  // empty counts as unset
    EXPECT_EQ(MoetuneCacheDir(), "/home/u/.cache/moetune");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv no_home("HOME", nullptr);
  EXPECT_EQ(MoetuneCacheDir(), "");
}

}  // namespace
}  // namespace moetune
