#pragma once
/// A synthetic model as a sparse file: the real GGUF header (metadata and
/// tensor infos) followed by a hole as large as the tensor data. It opens like
/// the full model for every header-only use (inspect, plan, plan --predict, the
/// simulated engine, llama-fit-params' memory dry run, which reads no weights)
/// and costs a few MB of disk even at full scale (a 400 GB DeepSeek shape
/// included). Its weights read as zeros: not for speed measurements.

#include <string>
#include <vector>

#include "model/synth.h"
#include "util/result.h"

namespace moetune {

/// Writes `options`' model to `path` atomically (temp file + rename) as a sparse
/// file; `path` may not be one of `inputs`.
Result<SynthSummary> WriteSparseSynthModel(const SynthOptions& options, const std::string& path,
                                           const std::vector<std::string>& inputs = {});

}  // namespace moetune
