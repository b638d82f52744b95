// libFuzzer target for the one bounded parse of outside JSON (util/json_parse.h).
// Properties: no crash and no sanitizer report for any input (deep nesting
// included); what is accepted nests at most the limit, so it can be copied,
// dumped and parsed back to an equal value; the discarding form agrees with
// the error form.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "util/json_parse.h"
#include "util/utf8.h"

namespace {

int Depth(const nlohmann::json& j, int limit) {
  if (limit < 0) return 0;
  int deepest = 0;
  if (j.is_structured()) {
    for (const auto& v : j) deepest = std::max(deepest, Depth(v, limit - 1));
    return deepest + 1;
  }
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  JsonLimits limits;
  limits.max_depth = 16;  // small, so that the fuzzer reaches the bound
  limits.max_values = 4096;
  auto j = ParseJson(text, "fuzz", limits);
  fuzz::Check(j.ok() != ParseJsonOrDiscarded(text, limits).is_discarded(), "json_parse",
              "ParseJson and ParseJsonOrDiscarded disagree");
  if (!j.ok()) return 0;
  fuzz::Check(Depth(*j, 64) <= limits.max_depth, "json_parse", "accepted JSON nests too deep");
  const nlohmann::json copy = *j;
  const std::string dumped = DumpJson(copy, -1);
  auto again = ParseJson(dumped, "dump", limits);
  fuzz::Check(again.ok(), "json_parse", "the dump of an accepted value is refused");
  fuzz::Check(IsValidUtf8(dumped), "json_parse", "the dump is not UTF-8");
  return 0;
}
