// libFuzzer target for the parsers of command-line values (sizes, token
// counts, llama-bench style lists, workloads). Properties: no crash, no
// sanitizer report (signed overflow is UB and aborts here), and accepted values
// are in range: sizes are non-negative, lists are bounded in length.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "engine/run_config.h"
#include "tune/objective.h"
#include "util/units.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "options_fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto b = ParseBytes(text); b.ok()) Check(b->count() >= 0, "size non-negative");
  if (auto t = ParseTokenCount(text); t.ok()) Check(*t >= 0, "token count non-negative");
  if (auto l = ParseIntList(text); l.ok()) Check(l->size() <= 10001, "list bounded");
  if (auto w = ParseWorkload(text); w.ok()) {
    Check(w->prompt_tokens >= 0 && w->answer_tokens >= 0, "workload non-negative");
    (void)w->SecondsPerRequest(100, 10);
  }
  (void)SplitList(text);
  return 0;
}
