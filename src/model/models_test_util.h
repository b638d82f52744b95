#pragma once
/// Test-only helper (header-only, included by *_test.cc): the header (metadata
/// + tensor infos, no data) of a synthesized model at any scale, so that
/// full-size shapes can be analysed without writing gigabytes.

#include <gtest/gtest.h>

#include <string>

#include "gguf/gguf.h"
#include "model/synth.h"

namespace moetune {

/// Builds the GgufModel a reader would return for `preset` at `scale`.
/// Adds a test failure and returns an empty model when the preset is broken.
inline GgufModel SynthHeaderModel(const std::string& preset, const std::string& scale = "full",
                                  SynthQuant quant = SynthQuant::kQ4_K_M) {
  GgufModel m;
  auto spec = SynthPreset(preset);
  auto sc = ParseSynthScale(scale);
  if (!spec.ok() || !sc.ok()) {
    ADD_FAILURE() << "bad preset/scale " << preset << " " << scale;
    return m;
  }
  SynthOptions opts;
  opts.spec = ScaleSynthSpec(*spec, *sc);
  opts.quant = quant;
  auto writer = BuildSynthWriter(opts);
  if (!writer.ok()) {
    ADD_FAILURE() << writer.error().message();
    return m;
  }
  GgufFile f;
  f.path = preset + ".gguf";
  f.metadata = writer->metadata();
  uint64_t offset = 0;
  for (const auto& t : writer->tensors()) {
    TensorInfo ti;
    ti.name = t.name;
    ti.ne = t.ne;
    ti.type = t.type;
    ti.n_bytes = t.n_bytes;
    ti.offset = offset;
    offset += (t.n_bytes + 31) / 32 * 32;
    f.tensors.push_back(ti);
    m.tensors.push_back(ti);
  }
  f.file_size = offset;
  m.parts.push_back(std::move(f));
  return m;
}

}  // namespace moetune
