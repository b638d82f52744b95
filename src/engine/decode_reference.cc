#include "engine/decode_reference.h"

#include <fmt/format.h>

#include "engine/llama_bench.h"

namespace moetune {

Result<DecodeReference> MeasureDecodeBandwidth(const EngineInfo& engine, const std::string& model,
                                               int64_t bytes_per_token, int64_t model_bytes,
                                               int64_t llc_bytes,
                                               const DecodeCheckOptions& options) {
  RunConfig c;
  c.model = model;
  // Every layer on the CPU: the weights stream from host memory.
  c.placement.n_gpu_layers = 0;
  c.placement.n_cpu_moe = 0;
  c.threads = options.threads;
  c.n_gen = options.n_gen;
  c.repetitions = options.repetitions;
  LlamaBenchOptions lo;
  lo.timeout_per_test = options.timeout;
  lo.load_allowance = options.timeout;
  lo.count_loads = false;
  LlamaBenchEngine bench(engine, lo);
  const BenchRun run = bench.Run({c});
  const RunResult& r = run.results.at(0);
  if (!r.ok()) {
    return Error(ErrorKind::kEngine,
                 fmt::format("the CPU-only decode failed ({}): {}",
                             FailureKindName(r.failure->kind), r.failure->message));
  }
  std::vector<std::string> command;
  if (!run.invocations.empty()) command = run.invocations.front().argv;
  return MakeDecodeReference(r.avg_ts, bytes_per_token, model_bytes, llc_bytes, c.threads,
                             std::move(command));
}

}  // namespace moetune
