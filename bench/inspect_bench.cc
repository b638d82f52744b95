// Times what `moetune inspect` does after start-up: open the model (header
// only), analyse the architecture, map the weights and render the report, on
// the full-size DeepSeek-V3 shape (1,000+ tensors, ~400 GB). The tensor data
// exists only as a sparse hole (ftruncate): inspect must never read it.
// Target (issue 2): under 50 ms.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/model_info.h"
#include "model/synth.h"
#include "report/model_report.h"
#include "sparse_model.h"

namespace moetune {
namespace {

std::string MakeSparseModel() {
  static std::string path;
  if (!path.empty()) return path;
  auto spec = SynthPreset("deepseek2");
  auto scale = ParseSynthScale("full");
  if (!spec.ok() || !scale.ok()) std::abort();
  SynthOptions o;
  o.spec = ScaleSynthSpec(*spec, *scale);
  o.quant = SynthQuant::kQ4_K_M;
  auto w = BuildSynthWriter(o);
  if (!w.ok()) std::abort();
  path = WriteSparseModel(*w, "moetune_inspect_bench");
  return path;
}

void BM_InspectDeepSeekV3Header(benchmark::State& state) {
  const std::string path = MakeSparseModel();
  size_t tensors = 0;
  for (auto _ : state) {
    auto m = LoadModelInfo(path);
    if (!m.ok()) {
      state.SkipWithError(m.error().message().c_str());
      break;
    }
    tensors = m->gguf.tensors.size();
    std::string text = InspectText(*m, DefaultInspectContexts());
    benchmark::DoNotOptimize(text);
  }
  state.counters["tensors"] = static_cast<double>(tensors);
}
BENCHMARK(BM_InspectDeepSeekV3Header)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace
}  // namespace moetune

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::remove(moetune::MakeSparseModel().c_str());
  return 0;
}
