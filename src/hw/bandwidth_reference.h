#pragma once
/// Independent references for doctor's measured read bandwidth, reported beside
/// it so that the figure can be judged rather than trusted:
///  - sysbench's memory read test with the same number of threads: a lower
///    bound (one scalar load per iteration, so it keeps fewer cache misses in
///    flight than SIMD streaming does; the measurement must not fall below it);
///  - the bandwidth a CPU-only llama.cpp decode achieves on the user's model:
///    weight bytes read per token (WeightMap::bytes_per_token) x tokens per
///    second. It is what the tuner's speed model will see; it is below the
///    streaming figure by however much compute and synchronisation cost.
/// The decode run needs the engine, so the command layer makes it
/// (engine/decode_reference.h) and hands the result to the report.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace moetune {

struct SysbenchReference {
  double read_gbps = 0;  // best of the rounds, 1e9 bytes per second
  int threads = 0;
  int rounds = 0;
  std::vector<std::string> command;
};

struct DecodeReference {
  double tokens_per_second = 0;  // llama-bench's mean over repetitions
  int64_t bytes_per_token = 0;   // weights read per generated token
  double gbps = 0;               // tokens_per_second x bytes_per_token / 1e9
  int threads = 0;
  std::vector<std::string> command;  // exactly what ran
  std::string note;                  // caveats (a model that fits in cache)
};

/// The "(16351.90 MiB/sec)" figure of `sysbench memory` in GB/s (1e9); nullopt
/// when the text has none.
std::optional<double> ParseSysbenchGbps(std::string_view text);

/// Runs `sysbench memory --memory-oper=read` `rounds` times with `threads`
/// threads over blocks of `block_bytes` and keeps the best. kNotFound when
/// sysbench is not installed.
Result<SysbenchReference> RunSysbenchRead(int threads, int64_t block_bytes, int rounds);

/// The reference from a decode measurement; the note says when the model is
/// small enough to be served from the last-level cache.
DecodeReference MakeDecodeReference(double tokens_per_second, int64_t bytes_per_token,
                                    int64_t model_bytes, int64_t llc_bytes, int threads,
                                    std::vector<std::string> command);

}  // namespace moetune
