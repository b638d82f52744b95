#pragma once
/// doctor's second bandwidth reference (hw/bandwidth_reference.h): a short
/// CPU-only decode of the user's model with the real llama-bench (-ngl 0, one
/// tg test), turned into the bandwidth llama.cpp achieved: weight bytes read
/// per token (model/memory_map.h, WeightMap::bytes_per_token) x tokens/s. The
/// command reported is exactly the one that ran.

#include <chrono>
#include <cstdint>
#include <string>

#include "engine/engine_info.h"
#include "hw/bandwidth_reference.h"
#include "util/result.h"

namespace moetune {

struct DecodeCheckOptions {
  int threads = 1;
  int n_gen = 16;
  int repetitions = 3;
  std::chrono::milliseconds timeout{120000};
};

/// Runs the decode and returns the reference; the engine's failure (with its
/// kind and message) otherwise.
Result<DecodeReference> MeasureDecodeBandwidth(const EngineInfo& engine, const std::string& model,
                                               int64_t bytes_per_token, int64_t model_bytes,
                                               int64_t llc_bytes,
                                               const DecodeCheckOptions& options);

}  // namespace moetune
