// libFuzzer target for the Hugging Face config.json reader of `moetune synth
// --config` (untrusted input: configs are downloaded) and for the synth writer
// fed from what it accepts. Properties: no crash, no sanitizer report
// (divisions by zero and signed overflow abort here); an accepted config gives a
// shape that passes ValidateSynthSpec; the writer builds its header from that
// shape (at every scale `synth` offers) or refuses it with an error, and an
// accepted header parses again with the GGUF reader.
//
// The layer count and the vocabulary only repeat the same arithmetic (one more
// layer, one more token), so they are capped before the writer runs to keep an
// execution short; every width, head and expert count goes through unchanged.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "gguf/reader.h"
#include "model/synth.h"
#include "model/synth_spec.h"

namespace {

using namespace moetune;

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "hf_config_fuzz", what); }

// Builds the writer for `spec` and parses its header back.
void BuildAndReadBack(const SynthSpec& spec) {
  SynthOptions o;
  o.spec = spec;
  if (!ValidateSynthSpec(o.spec).ok()) return;
  SynthSummary sum;
  auto w = BuildSynthWriter(o, &sum);
  if (!w.ok()) return;
  auto header = w->HeaderBytes();
  if (!header.ok()) return;
  uint64_t data = 0;
  for (const auto& t : w->tensors()) {
    const uint64_t padded = (t.n_bytes + w->alignment() - 1) / w->alignment() * w->alignment();
    if (__builtin_add_overflow(data, padded, &data)) return;  // not a file that could exist
  }
  uint64_t file_size = 0;
  if (__builtin_add_overflow(data, header->size(), &file_size)) return;
  auto again = ParseGgufHeader(*header, file_size);
  Check(again.ok(), "the synth header parses again");
  Check(again->tensors.size() == sum.n_tensors, "same tensor count");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = fuzz::JsonInput(data, size);
  if (!input) return 0;
  const nlohmann::json& j = *input;
  auto spec = SynthSpecFromHfConfig(j);
  if (!spec.ok()) return 0;
  Check(ValidateSynthSpec(*spec).ok(), "an accepted config is a valid shape");
  SynthSpec capped = *spec;
  capped.n_layer = std::min<int64_t>(capped.n_layer, 16);
  capped.n_vocab = std::min<int64_t>(capped.n_vocab, 4096);
  (void)SummarizeSynth(capped, SynthQuant::kQ4_K_M);
  BuildAndReadBack(capped);
  for (const char* scale : {"tiny", "small", "0.5"}) {
    SynthSpec scaled = ScaleSynthSpec(*spec, *ParseSynthScale(scale));
    scaled.n_layer = std::min<int64_t>(scaled.n_layer, 16);
    scaled.n_vocab = std::min<int64_t>(scaled.n_vocab, 4096);
    BuildAndReadBack(scaled);
  }
  return 0;
}
