// libFuzzer target for llama-bench's JSONL reader (engine/bench_jsonl.h).
// Beyond "no crash, no sanitizer report, no exception":
//  - every accepted record has counts in range (no wrapped integers), finite
//    rates and non-negative sample durations;
//  - a record's raw JSON can be written out again (valid UTF-8);
//  - each object line is either a record or one named error.
// Seeds: tests/fuzz/corpus/bench_jsonl/ (real output of the installed engine).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/bench_jsonl.h"
#include "fuzz_check.h"

namespace {

using namespace moetune;

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "bench_jsonl_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> bad;
  const auto records = ParseBenchJsonl(text, &bad);
  for (const auto& r : records) {
    Check(r.n_prompt >= 0 && r.n_gen >= 0 && r.n_depth >= 0, "counts in range");
    Check(std::isfinite(r.avg_ts) && std::isfinite(r.stddev_ts), "finite rates");
    Check(!r.samples_ts.empty(), "at least one sample");
    for (double s : r.samples_ts) Check(std::isfinite(s), "finite sample");
    for (int64_t ns : r.samples_ns) Check(ns >= 0, "non-negative duration");
    Check(r.flash_attn.empty() || r.flash_attn == "on" || r.flash_attn == "off" ||
              r.flash_attn == "auto" || r.raw["flash_attn"].is_string(),
          "flash_attn spelled once");
    (void)r.raw.dump();  // must not throw: the parser accepted only valid UTF-8
  }
  for (const auto& e : bad) Check(!e.empty(), "errors have text");
  return 0;
}
