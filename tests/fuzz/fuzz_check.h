#pragma once
/// The property check of every fuzz target: a violated property aborts, which
/// libFuzzer reports as a finding with the input that caused it.

#include <cstdio>
#include <cstdlib>

namespace moetune::fuzz {

inline void Check(bool ok, const char* target, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "%s invariant violated: %s\n", target, what);
    std::abort();
  }
}

}  // namespace moetune::fuzz
