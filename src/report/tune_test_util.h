#pragma once
// A tune for tests of its report, from the real Tuner on a handwritten GPU
// machine (a fake engine: deterministic, no processes). The machine has the
// shapes a report must draw: placements with N >= 12 fit the GPU; N = 9..11
// overflow silently (prefill falls to a fifth: the cliff); N <= 8 fail to load
// (out of memory); more experts on the GPU is faster until the cliff; threads
// peak at 4; prefill falls gently with depth. Used by unit tests
// (report/tune_document_test.cc) and the Chromium tests of the report.

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "report/tune_report.h"
#include "tune/journal.h"
#include "tune/tuner.h"

namespace moetune::testing {

class FakeGpuMachine : public Engine {
 public:
  static constexpr int kLayers = 24;
  static constexpr int kFits = 12;      // smallest N that fits the GPU
  static constexpr int kLoads = 9;      // smallest N that loads at all
  static constexpr int kPredicted = 9;  // a plan that is too optimistic

  BenchRun Run(const std::vector<RunConfig>& configs, const ProgressCallback& = {}) override {
    BenchRun out;
    for (const auto& c : configs) {
      ++runs;
      RunResult r;
      r.config = c;
      const int n = c.placement.n_cpu_moe;
      if (n >= 0 && n < kLoads) {
        r.failure = EngineFailure{
            FailureKind::kOutOfMemoryDevice, "cudaMalloc failed: out of memory", "exit code 1", {}};
        out.results.push_back(std::move(r));
        continue;
      }
      const double v = Speed(c);
      std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(Journal::Key(c)) + runs));
      std::normal_distribution<double> noise(0, 0.015);
      for (int i = 0; i < std::max(1, c.repetitions); ++i) {
        const double x = v * (1 + noise(rng));
        r.samples_ts.push_back(x);
        r.samples_ns.push_back(static_cast<int64_t>((c.n_prompt + c.n_gen) / x * 1e9));
      }
      r.avg_ts = v;
      out.results.push_back(std::move(r));
    }
    return out;
  }

  std::size_t runs = 0;

 private:
  static double Speed(const RunConfig& c) {
    static const std::map<int, double> kThreads = {{2, 0.7}, {4, 1.0}, {6, 0.97}, {8, 0.9}};
    const double t = kThreads.count(c.threads) ? kThreads.at(c.threads) : 0.8;
    const int n = c.placement.n_cpu_moe;
    const bool prefill = c.n_prompt > 0;
    double v = prefill ? (250 + 12.0 * (kLayers - n)) / (1 + c.n_depth / 30000.0)
                       : (14 + 0.5 * (kLayers - n)) / (1 + c.n_depth / 60000.0);
    v *= t;
    if (prefill && c.n_ubatch > 512) v *= 1.15;
    // Whole layers on the CPU (Ollama's split: -ngl K, no --n-cpu-moe): their
    // attention runs there too.
    if (n < 0) return (prefill ? 120 : 9) * t;
    if (n < kFits) v *= prefill ? 0.2 : 0.8;  // silent spill over PCIe
    return v;
  }
};

inline TuneSpace FakeGpuSpace() {
  TuneSpace s;
  s.model = "/models/Fake-MoE-A3B-Q4_K_M.gguf";
  s.n_layer = FakeGpuMachine::kLayers;
  s.predicted_boundary = FakeGpuMachine::kPredicted;
  // The edge (N = kFits) has no headroom left: the safety rule keeps one layer more.
  s.headroom = [](int n) { return (int64_t{n} - FakeGpuMachine::kFits) * (int64_t{200} << 20); };
  s.threads = {{4, "physical cores"}, {2, "performance cores only"}, {8, "all logical CPUs"}};
  s.ubatches = {512, 1024};
  s.try_kv_quant = false;
  s.defaults = ServerConfig{};
  s.defaults->model = s.model;
  s.defaults->placement.n_cpu_moe =
      FakeGpuMachine::kLayers;  // llama.cpp's fit keeps them on the CPU
  s.defaults->threads = 8;
  s.defaults_how = "llama-fit-params placement, llama.cpp's default threads and batch sizes";
  s.ollama = ServerConfig{};
  s.ollama->model = s.model;
  s.ollama->placement.n_gpu_layers = 20;
  s.ollama->placement.n_cpu_moe = -1;
  s.ollama->n_batch = 512;
  s.ollama->flash_attn = FlashAttn::kOff;
  s.ollama->threads = 4;
  s.ollama_how = "Ollama's automatic offload: whole layers on the GPU, 20 of 24";
  return s;
}

// A tune of the fake machine at 16K tokens of context, with its memory map.
inline TuneReport FakeGpuTune(const TuneSpace& space = FakeGpuSpace()) {
  TuneOptions o;
  o.ctx = 16384;
  o.budget_seconds = 36000;
  FakeGpuMachine engine;
  TuneReport t;
  t.model_path = space.model;
  t.model_name = "Fake MoE A3B (test machine)";
  t.ctx = o.ctx;
  t.workload = o.workload;
  t.engine = "simulated: a handwritten GPU machine (tests)";
  t.simulated = true;
  t.machine = "test machine (8 logical CPUs, 4 physical cores)";
  t.checks = {"warning: a browser holds 300 MiB of VRAM. Fix: close it before serving"};
  t.result = Tuner(engine, space, o).Run();
  PlacementOption m;
  m.n_cpu_moe = t.result.best.placement.n_cpu_moe;
  m.gpu.weights[static_cast<size_t>(TensorRole::kRoutedExperts)] = int64_t{7200} << 20;
  m.gpu.weights[static_cast<size_t>(TensorRole::kAttention)] = int64_t{900} << 20;
  m.gpu.weights[static_cast<size_t>(TensorRole::kOutput)] = int64_t{300} << 20;
  m.gpu.kv = int64_t{1536} << 20;
  m.gpu.compute = int64_t{600} << 20;
  m.host.weights[static_cast<size_t>(TensorRole::kRoutedExperts)] = int64_t{9800} << 20;
  m.host.compute = int64_t{60} << 20;
  t.vram_budget = int64_t{11776} << 20;
  t.reserve = int64_t{512} << 20;
  m.headroom = t.vram_budget - (int64_t{1024} << 20) - m.gpu.total();
  m.fits = m.headroom >= 0;
  t.result.memory = m;
  t.reproduce = {"moetune tune /models/Fake-MoE-A3B-Q4_K_M.gguf --ctx 16384 --workload chat"};
  t.journal = "/tmp/fake.journal";
  return t;
}

}  // namespace moetune::testing
