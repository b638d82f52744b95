// Times what `moetune inspect` does after start-up: open the model (header
// only), analyse the architecture, map the weights and render the report, on
// the full-size DeepSeek-V3 shape (1,000+ tensors, ~400 GB). The tensor data
// exists only as a sparse hole (ftruncate): inspect must never read it.
// Target (issue 2): under 50 ms.

#include <fcntl.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/model_info.h"
#include "model/synth.h"
#include "report/model_report.h"

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
  auto header = w->HeaderBytes();
  if (!header.ok()) std::abort();
  uint64_t data = 0;
  for (const auto& t : w->tensors()) data += (t.n_bytes + w->alignment() - 1) / w->alignment() * w->alignment();
  path = "/tmp/moetune-inspect-bench-" + std::to_string(getpid()) + ".gguf";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(header->data(), 1, header->size(), f) != header->size()) std::abort();
  std::fclose(f);
  if (truncate(path.c_str(), static_cast<off_t>(header->size() + data)) != 0) std::abort();
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
