// libFuzzer target for llama-fit-params' output reader (engine/fit_params.h)
// and for the -ot rule parser and rewriter (engine/tensor_override.h), whose
// input is a user's flag. Beyond "no crash, no sanitizer report":
//  - every device line has a name and non-negative sizes whose sum fits;
//  - every parsed rule has a pattern and a buffer type, and the rewritten
//    pattern holds no ',', ';' or '=' (the characters llama.cpp splits at).
// Seeds: tests/fuzz/corpus/fit_params/ (real output of the installed engine).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/tensor_override.h"
#include "engine/fit_params.h"
#include "fuzz_check.h"

namespace {

using namespace moetune;

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "fit_params_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto devices = ParseFitParamsOutput(text); devices.ok()) {
    Check(!devices->empty(), "an accepted output has a device");
    for (const auto& d : *devices) {
      Check(!d.name.empty(), "device name");
      Check(d.model_bytes.count() >= 0 && d.context_bytes.count() >= 0 &&
                d.compute_bytes.count() >= 0,
            "non-negative sizes");
    }
  }
  if (auto rules = ParseTensorOverrides(text); rules.ok()) {
    for (const auto& r : *rules) Check(!r.pattern.empty() && !r.buft.empty(), "rule parts");
    if (auto bench = OverridesForBench(*rules); bench.ok()) {
      Check(bench->find(',') == std::string::npos, "no comma for llama-bench");
    }
    for (const auto& r : *rules) {
      if (auto p = CommaFreePattern(r.pattern); p.ok()) {
        Check(p->find_first_of(",;=") == std::string::npos, "comma-free pattern");
      }
    }
  }
  return 0;
}
