// Times LlamaBenchEngine::PlanInvocations, the grouping of a sweep into
// llama-bench processes, for sweeps of 100 to 10,000 configurations (the most
// `moetune bench` accepts). The grouping was quadratic (three lists of 100
// took minutes); the figures per configuration should stay flat as n grows.

#include <benchmark/benchmark.h>

#include <vector>

#include "engine/llama_bench.h"

namespace moetune {
namespace {

std::vector<RunConfig> Sweep(int threads, int ubatches) {
  std::vector<RunConfig> configs;
  for (int t = 1; t <= threads; ++t) {
    for (int ub = 1; ub <= ubatches; ++ub) {
      RunConfig c;
      c.model = "/models/m.gguf";
      c.threads = t;
      c.n_ubatch = ub;
      c.n_gen = 16;
      configs.push_back(c);
    }
  }
  return configs;
}

void BM_PlanInvocations(benchmark::State& state) {
  const int side = static_cast<int>(state.range(0));
  const std::vector<RunConfig> configs = Sweep(side, side);
  EngineInfo info;
  info.dir = "/opt/llama";
  info.bench_flags = {"-ncmoe", "-ot", "-d", "--progress", "-fa"};
  LlamaBenchEngine engine(info);
  std::size_t planned = 0;
  for (auto _ : state) {
    const auto plan = engine.PlanInvocations(configs);
    planned = plan.front().configs.size();
    benchmark::DoNotOptimize(planned);
  }
  state.counters["configs"] = static_cast<double>(planned);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(configs.size()));
}
BENCHMARK(BM_PlanInvocations)->Arg(10)->Arg(32)->Arg(100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moetune

BENCHMARK_MAIN();
