#pragma once
/// `moetune synth`: writes a valid GGUF model of a requested shape with random
/// but numerically sane weights and a minimal tokenizer, for tests and
/// benchmarks against the real llama.cpp. Data is generated chunk by chunk
/// while writing (a full-scale model never sits in memory) and deterministically
/// from (seed, tensor name, row), so the output does not depend on chunking.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "model/synth_spec.h"
#include "model/synth_tensors.h"
#include "util/result.h"

namespace moetune {

struct SynthOptions {
  SynthSpec spec;
  SynthQuant quant = SynthQuant::kQ8_0;
  uint64_t seed = 42;
  /// Called after each chunk of tensor data with the bytes written so far and
  /// the total; returning an error aborts the write (no output file is left).
  std::function<Status(uint64_t done, uint64_t total)> progress;
};

struct SynthSummary {
  uint64_t n_tensors = 0;
  uint64_t n_params = 0;
  uint64_t tensor_bytes = 0;  // sum of tensor data sizes (no padding, no header)
};

/// Builds the writer: metadata (hyperparameters, tokenizer) and tensors whose
/// data is produced on demand. Nothing is generated until the writer writes.
Result<GgufWriter> BuildSynthWriter(const SynthOptions& options, SynthSummary* summary = nullptr);

/// Sizes of the model without generating any data (used for full-scale checks).
Result<SynthSummary> SummarizeSynth(const SynthSpec& spec, SynthQuant quant);

/// Writes the model to `path` atomically (temp file + rename); `path` may not
/// be one of `inputs` (the files the command read, e.g. the config.json).
Result<SynthSummary> WriteSynthModel(const SynthOptions& options, const std::string& path,
                                     const std::vector<std::string>& inputs = {});

/// The hyperparameter keys written for `spec` (the {arch}.* part), for tests and docs.
void AddSynthHparams(const SynthSpec& spec, GgufWriter& writer);

}  // namespace moetune
