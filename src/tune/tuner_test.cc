#include "tune/tuner.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

// A GPU machine in a few lines: 40 layers; placements fit when N >= the
// boundary, which grows with the micro-batch and the context; an overflowing
// placement loses 80% of its prefill and 20% of its decode (silent spill).
// Threads peak at 6. Deterministic noise of about 1%.
class FakeGpuEngine : public Engine {
 public:
  int n_layer = 40;
  int boundary0 = 18;  // at depth 0, micro-batch 512
  double ctx_layers_per_32k = 2;
  double spill_growth = 0;  // per layer of overflow: a deeper spill is slower still
  /// A factor on both speeds of a configuration (1 = none): e.g. something
  /// only llama.cpp's defaults run with.
  std::function<double(const RunConfig&)> factor;
  std::size_t runs = 0;

  int Boundary(const RunConfig& c) const {
    int b = boundary0 + static_cast<int>(std::lround(ctx_layers_per_32k *
                                                     (c.n_depth + c.n_prompt + c.n_gen) / 32768.0));
    for (int ub = c.n_ubatch; ub > 512; ub /= 2) ++b;
    if (c.type_k == ggml_type::kQ8_0) b -= 1;
    if (c.flash_attn == FlashAttn::kOff) b += 1;
    return b;
  }
  double Speed(const RunConfig& c, bool prefill) const {
    const int n = c.placement.n_cpu_moe;
    const bool fits = n >= Boundary(c);
    static const std::map<int, double> kThreads = {{2, 0.6},  {4, 0.9},   {6, 1.0},
                                                   {8, 0.97}, {12, 0.92}, {16, 0.85}};
    const double t = kThreads.count(c.threads) ? kThreads.at(c.threads) : 0.8;
    double v;
    if (prefill) {
      v = (300 + 8.0 * (n_layer - n)) * t / (1 + c.n_depth / 20000.0);
      v *= 1 + 0.25 * std::log2(std::min(c.n_ubatch, std::max(c.n_prompt, 512)) / 512.0);
      if (c.load_mode == LoadMode::kNone) v *= 1.05;
      if (!fits) v *= 0.2 / (1 + spill_growth * (Boundary(c) - n));
    } else {
      v = (20 + 0.4 * (n_layer - n)) * t / (1 + c.n_depth / 40000.0);
      if (!fits) v *= 0.8 / (1 + spill_growth * (Boundary(c) - n));
    }
    if (c.type_k == ggml_type::kQ8_0) v *= 0.98;
    if (factor) v *= factor(c);
    return v;
  }
  BenchRun Run(const std::vector<RunConfig>& configs, const ProgressCallback& = {}) override {
    BenchRun out;
    for (const auto& c : configs) {
      ++runs;
      RunResult r;
      r.config = c;
      const double v = Speed(c, c.n_prompt > 0);
      std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(Journal::Key(c)) + runs));
      std::normal_distribution<double> noise(0, 0.01);
      for (int i = 0; i < std::max(1, c.repetitions); ++i) {
        const double x = v * (1 + noise(rng));
        r.samples_ts.push_back(x);
        r.samples_ns.push_back(static_cast<int64_t>((c.n_prompt + c.n_gen) / x * 1e9));
      }
      r.avg_ts = v;
      out.results.push_back(r);
    }
    return out;
  }
};

TuneSpace Space(const FakeGpuEngine& e, int64_t ctx) {
  TuneSpace s;
  s.model = "m.gguf";
  s.n_layer = e.n_layer;
  // The plan's prediction: fits at the target context from N = boundary + ctx growth.
  const int at_ctx =
      e.boundary0 +
      static_cast<int>(std::lround(e.ctx_layers_per_32k * static_cast<double>(ctx) / 32768.0));
  s.predicted_boundary = at_ctx + 1;  // plans keep a margin, so they are a little conservative
  s.fits = [at_ctx](int n, int ub, uint32_t kv) {
    int b = at_ctx;
    for (int u = ub; u > 512; u /= 2) ++b;
    if (kv == ggml_type::kQ8_0) b -= 1;
    return n >= b;
  };
  s.headroom = [at_ctx](int n) { return (int64_t{n} - at_ctx + 1) * (int64_t{300} << 20); };
  s.threads = {
      {8, "physical cores"}, {6, "performance cores only"}, {16, "all logical CPUs"}, {4, "fewer"}};
  s.defaults = ServerConfig{};
  s.defaults->model = "m.gguf";
  s.defaults->placement.n_cpu_moe = e.n_layer;  // the fit gives up and keeps experts on the CPU
  s.defaults->threads = 8;
  s.defaults_how = "test";
  return s;
}

TEST(TunerTest, FindsTheBoundaryValidatesDepthAndTunesThreads) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  Tuner t(engine, Space(engine, o.ctx), o);
  const TuneResult r = t.Run();
  // At depth 0 N=18 fits, but at 32K only N >= 20: validation rejects 18 and 19
  // and keeps 20, proven safe at the target context (or 21, tied with it: a tie
  // goes to the safer placement).
  ASSERT_GE(r.decisions.size(), 2u);
  EXPECT_GE(r.best.placement.n_cpu_moe, 20);
  EXPECT_LE(r.best.placement.n_cpu_moe, 21);
  std::set<int> rejected;
  for (const auto& j : r.analysis.rejected) rejected.insert(j.n_cpu_moe);
  EXPECT_TRUE(rejected.count(18) && rejected.count(19));
  EXPECT_EQ(r.best.threads, 6);
  EXPECT_FALSE(r.budget_exhausted);
  ASSERT_TRUE(r.versus_defaults);
  ASSERT_TRUE(r.versus_defaults->tuned_seconds_ctx && r.versus_defaults->default_seconds_ctx);
  EXPECT_LT(*r.versus_defaults->tuned_seconds_ctx, *r.versus_defaults->default_seconds_ctx);
  // Far fewer runs than a grid over N x threads x micro-batch x depths.
  const std::size_t grid = std::size_t{41} * 5 * 3 * 3 * 2;
  EXPECT_LT(engine.runs * 3, grid);
  bool long_context = false;
  for (const auto& d : r.decisions)
    long_context = long_context || d.phase == TunePhase::kLongContext;
  EXPECT_TRUE(long_context);
}

// Never behind llama.cpp's defaults: when the defaults run faster beyond the
// noise (here a setting only they use makes both speeds 1.5x), they are
// measured again and become the pick, and the decision says so.
TEST(TunerTest, DefaultsFasterBeyondTheNoiseBecomeThePick) {
  FakeGpuEngine engine;
  engine.factor = [](const RunConfig& c) { return c.threads == 3 ? 1.5 : 1.0; };
  TuneOptions o;
  o.ctx = 32768;
  TuneSpace space = Space(engine, o.ctx);
  space.defaults->threads = 3;
  space.defaults->placement.n_cpu_moe = 24;  // safe at 32K
  Tuner t(engine, space, o);
  const TuneResult r = t.Run();
  ASSERT_TRUE(r.versus_defaults);
  EXPECT_EQ(r.versus_defaults->pick, Versus::kSlower);
  EXPECT_TRUE(r.defaults_chosen);
  EXPECT_EQ(r.best.threads, 3);
  EXPECT_EQ(r.best.placement.n_cpu_moe, 24);
  EXPECT_EQ(r.best.ctx_size, o.ctx);
  EXPECT_EQ(r.best.fit, Switch::kOff);
  ASSERT_FALSE(r.decisions.empty());
  EXPECT_EQ(r.decisions.back().phase, TunePhase::kDefaults);
  EXPECT_EQ(r.decisions.back().choice, "llama.cpp's defaults");
  // Measured again before believed: the pooled estimates hold both rounds.
  ASSERT_TRUE(r.versus_defaults->default_objective && r.versus_defaults->tuned_objective);
  EXPECT_GT(r.versus_defaults->compared_depth, o.ctx / 2);  // the target context
  EXPECT_EQ(r.versus_defaults->default_objective->n, 2 * o.depth_repetitions);
  EXPECT_GT(r.versus_defaults->default_objective->mean, r.versus_defaults->tuned_objective->mean);
}

// A pick inside the plan's margin is called safe only with the measurement
// at the target context that proves it, and the figures say so.
TEST(TunerTest, ATightPickIsProvenAtTheTargetContext) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  TuneSpace space = Space(engine, o.ctx);
  space.margin = int64_t{1024} << 20;
  space.memory_of = [](const ServerConfig&) {
    PlacementOption p;
    p.headroom = -(int64_t{190} << 20);
    return std::optional<PlacementOption>(p);
  };
  Tuner t(engine, space, o);
  const TuneResult r = t.Run();
  EXPECT_EQ(r.safety.headroom, HeadroomStanding::kInsideMargin);
  EXPECT_EQ(r.safety.headroom_bytes, -(int64_t{190} << 20));
  ASSERT_TRUE(r.safety.proven_depth.has_value());
  EXPECT_GT(*r.safety.proven_depth, o.ctx / 2);  // the target context less the prompt
  EXPECT_LT(*r.safety.proven_depth, o.ctx);
  ASSERT_TRUE(r.safety.prefill_kept.has_value());
  EXPECT_GT(*r.safety.prefill_kept, 0.3);
  EXPECT_LE(*r.safety.prefill_kept, 1.0);
  EXPECT_TRUE(r.safety.safe());
}

// Without any depth to measure (a context no larger than the prompt), a tight
// pick is not proven, and the verdict says so.
TEST(TunerTest, ATightPickWithoutADepthIsNotProven) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 1024;
  TuneSpace space = Space(engine, o.ctx);
  space.margin = int64_t{1024} << 20;
  space.memory_of = [](const ServerConfig&) {
    PlacementOption p;
    p.headroom = -(int64_t{452} << 20);
    return std::optional<PlacementOption>(p);
  };
  Tuner t(engine, space, o);
  const TuneResult r = t.Run();
  EXPECT_EQ(r.safety.headroom, HeadroomStanding::kInsideMargin);
  EXPECT_FALSE(r.safety.proven_depth.has_value());
  EXPECT_FALSE(r.safety.safe());
}

// Evidence and choice agree: in every phase that compares candidates, the
// evidence marks exactly one candidate "chosen", the one the decision names,
// with the objective the tie rule compared (a tie to a safer candidate shows
// which was taken, not only which was best).
TEST(TunerTest, TheEvidenceNamesTheCandidateTheDecisionChose) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  Tuner t(engine, Space(engine, o.ctx), o);
  const TuneResult r = t.Run();
  int phases = 0;
  for (const auto& d : r.decisions) {
    if (d.phase != TunePhase::kThreads && d.phase != TunePhase::kMicroBatch &&
        d.phase != TunePhase::kFlashAttention && d.phase != TunePhase::kLoadMode)
      continue;
    ++phases;
    std::vector<std::string> parts;
    std::string::size_type from = 0, at;
    while ((at = d.evidence.find("; ", from)) != std::string::npos) {
      parts.push_back(d.evidence.substr(from, at - from));
      from = at + 2;
    }
    parts.push_back(d.evidence.substr(from));
    int chosen = 0;
    for (const auto& p : parts) {
      if (p.find(", chosen") == std::string::npos) continue;
      ++chosen;
      EXPECT_NE(p.find("requests/s"), std::string::npos) << p;
      // The decision's choice names the same setting.
      std::string setting;  // how the evidence names the decision's choice
      switch (d.phase) {
        case TunePhase::kThreads:
          setting = d.choice;  // "-t 6"
          break;
        case TunePhase::kMicroBatch:
          setting = d.choice.substr(0, d.choice.find(" -b"));  // "-ub 512"
          break;
        case TunePhase::kFlashAttention:
          setting = d.choice.substr(4);  // "on" of "-fa on"
          break;
        default:
          setting = d.choice.rfind("memory-mapped", 0) == 0 ? "mmap" : "loaded";
      }
      const std::string p_setting = p.rfind("prefill of ", 0) == 0 ? p.substr(p.find(": ") + 2) : p;
      EXPECT_EQ(p_setting.rfind(setting, 0), 0u) << d.choice << " | " << p;
    }
    EXPECT_EQ(chosen, 1) << TunePhaseName(d.phase) << ": " << d.evidence;
  }
  EXPECT_GE(phases, 3);
}

// The usual case: the tuned settings beat the defaults, which stay the baseline.
TEST(TunerTest, TunedFasterThanTheDefaultsKeepsThePick) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  Tuner t(engine, Space(engine, o.ctx), o);
  const TuneResult r = t.Run();
  ASSERT_TRUE(r.versus_defaults);
  EXPECT_EQ(r.versus_defaults->pick, Versus::kFaster);
  EXPECT_FALSE(r.defaults_chosen);
  EXPECT_EQ(r.versus_defaults->default_objective->n, o.depth_repetitions);
  for (const auto& d : r.decisions) EXPECT_NE(d.phase, TunePhase::kDefaults);
}

// The case of the "safety rule steps back once" through tune's decision path:
// the depth-0 peak's side of the boundary (N=18, 19) collapses at the target
// context, N=20 holds there; N=20 is the one layer more conservative, proven,
// and tune takes it rather than N=21 (within the noise of it, and safer).
TEST(TunerTest, PeakCollapsingAtTheTargetContextGivesItsHealthyNeighbour) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  Tuner t(engine, Space(engine, o.ctx), o);
  const TuneResult r = t.Run();
  EXPECT_EQ(r.best.placement.n_cpu_moe, 20);
  const Decision* validation = nullptr;
  for (const auto& d : r.decisions) {
    if (d.phase == TunePhase::kLongContext) validation = &d;
  }
  ASSERT_NE(validation, nullptr);
  ASSERT_TRUE(validation->reading);
  EXPECT_EQ(validation->reading->rule, RecommendationRule::kSafeNeighbour) << validation->rule;
  ASSERT_TRUE(validation->reading->stepped_from);
  EXPECT_EQ(validation->reading->stepped_from->n_cpu_moe, 19);
  // The depth-0 phase may have stood at 19 or 20 (a tie in the noise): the
  // rule is the safe neighbour either way.
  EXPECT_EQ(validation->rule.rfind("safe neighbour", 0), 0u) << validation->rule;
}

// A plan whose margin is two layers wider than the machine needs cannot judge
// the placement validated at the target context. A larger micro-batch is then
// tried only where the memory map puts no more bytes on the GPU than the
// validated setting: with a silent spill, that edge is a cliff.
TEST(TunerTest, LargerMicroBatchKeepsTheValidatedGpuAllocation) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  TuneSpace s = Space(engine, o.ctx);
  constexpr int64_t kLayer = int64_t{300} << 20;
  const int plan_edge = 22;  // the machine's edge at 32K is N=20
  // The memory map: each layer of experts on the CPU frees a layer's bytes;
  // each doubling of the micro-batch adds a layer's worth of compute buffer.
  s.gpu_bytes = [n_layer = engine.n_layer](int n, int ub, uint32_t kv) {
    int64_t layers = n_layer - n;
    for (int u = ub; u > 512; u /= 2) ++layers;
    if (kv == ggml_type::kQ8_0) --layers;
    return (int64_t{1} << 30) + layers * kLayer;
  };
  s.fits = [gpu = s.gpu_bytes, budget = s.gpu_bytes(plan_edge, 512, ggml_type::kF16)](
               int n, int ub, uint32_t kv) { return gpu(n, ub, kv) <= budget; };
  s.headroom = [gpu = s.gpu_bytes, budget = s.gpu_bytes(plan_edge, 512, ggml_type::kF16)](int n) {
    return budget - gpu(n, 512, ggml_type::kF16);
  };
  s.predicted_boundary = plan_edge;
  const TuneResult r = Tuner(engine, s, o).Run();
  ASSERT_TRUE(r.analysis.recommendation.n_cpu_moe);
  const int validated = *r.analysis.recommendation.n_cpu_moe;
  ASSERT_FALSE(s.fits(validated, 512, ggml_type::kF16)) << "the plan judges N=" << validated;
  const int64_t measured = s.gpu_bytes(validated, 512, ggml_type::kF16);
  bool larger_tried = false;
  for (const auto& m : r.measurements) {
    const RunConfig& c = m.config;
    if (c.n_ubatch <= 512) continue;
    EXPECT_LE(s.gpu_bytes(c.placement.n_cpu_moe, c.n_ubatch, c.type_k), measured)
        << "measured -ub " << c.n_ubatch << " at N=" << c.placement.n_cpu_moe
        << ", validated N=" << validated;
    larger_tried = larger_tried || (c.n_ubatch == 1024 && c.placement.n_cpu_moe == validated + 1);
  }
  EXPECT_TRUE(larger_tried) << "-ub 1024 was not tried one layer safer";
  EXPECT_LE(s.gpu_bytes(r.best.placement.n_cpu_moe, r.best.n_ubatch, r.best.type_k), measured);
}

// Nothing fits, not even every expert on the CPU: a larger micro-batch would
// only put more on an over-full GPU, so it is not tried, and the decision says so.
TEST(TunerTest, NoLargerMicroBatchWhenNothingKeepsTheAllocation) {
  FakeGpuEngine engine;
  engine.boundary0 = 45;    // beyond the 40 layers: every placement spills,
  engine.spill_growth = 1;  // the more on the GPU, the worse
  TuneOptions o;
  o.ctx = 4096;
  o.budget_seconds = 1e6;  // the spilling runs stand for a lot of time
  TuneSpace s = Space(engine, o.ctx);
  s.gpu_bytes = [n_layer = engine.n_layer](int n, int ub, uint32_t) {
    int64_t layers = n_layer - n;
    for (int u = ub; u > 512; u /= 2) ++layers;
    return (int64_t{2} << 30) + layers * (int64_t{300} << 20);
  };
  s.fits = [](int, int, uint32_t) { return false; };
  s.headroom = [](int) { return int64_t{-1} << 30; };
  s.predicted_boundary = engine.n_layer;
  const TuneResult r = Tuner(engine, s, o).Run();
  ASSERT_FALSE(r.budget_exhausted);
  EXPECT_EQ(r.best.placement.n_cpu_moe, engine.n_layer);
  EXPECT_EQ(r.best.n_ubatch, 512);
  for (const auto& m : r.measurements) {
    EXPECT_LE(m.config.n_ubatch, 512) << "N=" << m.config.placement.n_cpu_moe;
  }
  bool said = false;
  for (const auto& d : r.decisions) {
    said =
        said || (d.phase == TunePhase::kMicroBatch && d.evidence.find("-ub 1024: not tried") == 0);
  }
  EXPECT_TRUE(said);
}

TEST(TunerTest, ShortContextPicksTheEdgeOrOneSafer) {
  FakeGpuEngine engine;
  engine.ctx_layers_per_32k = 0;
  TuneOptions o;
  o.ctx = 4096;
  TuneSpace s = Space(engine, o.ctx);
  s.predicted_boundary = 25;  // a poor prediction: the search must walk down to 18
  Tuner t(engine, s, o);
  const TuneResult r = t.Run();
  EXPECT_GE(r.best.placement.n_cpu_moe, 18);
  EXPECT_LE(r.best.placement.n_cpu_moe, 19);
}

TEST(TunerTest, BudgetGivesTheBestSoFar) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  o.budget_seconds = 1;  // the fake's runs stand for more than this
  Tuner t(engine, Space(engine, o.ctx), o);
  const TuneResult r = t.Run();
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_FALSE(r.notes.empty());
  EXPECT_GT(r.measured, 0u);
}

TEST(TunerTest, JournalResumesWithoutMeasuringAgain) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  const JournalIdentity id{"m", "fake", "machine"};
  TuneOptions o;
  o.ctx = 32768;
  FakeGpuEngine first_engine;
  TuneResult first;
  {
    auto j = Journal::Open(path, id);
    ASSERT_TRUE(j.ok());
    first = Tuner(first_engine, Space(first_engine, o.ctx), o, j->get()).Run();
  }
  FakeGpuEngine second_engine;
  auto j = Journal::Open(path, id);
  ASSERT_TRUE(j.ok());
  const TuneResult second = Tuner(second_engine, Space(second_engine, o.ctx), o, j->get()).Run();
  EXPECT_EQ(second_engine.runs, 0u);
  EXPECT_EQ(second.measured, 0u);
  EXPECT_EQ(second.resumed, first.measured);
  EXPECT_EQ(second.best.placement.n_cpu_moe, first.best.placement.n_cpu_moe);
  EXPECT_EQ(second.best.threads, first.best.threads);
}

// A q8_0 KV cache 10% faster than f16, and one of its two repetitions at the
// target context slowed to a fifth by something else on the machine.
class SlowRepetitionEngine : public FakeGpuEngine {
 public:
  BenchRun Run(const std::vector<RunConfig>& configs, const ProgressCallback& cb = {}) override {
    BenchRun out = FakeGpuEngine::Run(configs, cb);
    for (auto& r : out.results) {
      if (r.config.type_k != ggml_type::kQ8_0) continue;
      for (double& x : r.samples_ts) x *= 1.1;
      if (r.config.n_depth > 0 && r.config.n_prompt > 0) r.samples_ts.front() *= 0.2;
    }
    return out;
  }
};

TEST(TunerTest, KvCacheCollapseIsReadOnBestRepetitions) {
  // Read on means, the slow repetition would call the q8_0 cache collapsed at
  // depth; the collapse rule reads the best repetition of each test.
  SlowRepetitionEngine engine;
  TuneOptions o;
  o.ctx = 32768;
  Tuner t(engine, Space(engine, o.ctx), o);
  const TuneResult r = t.Run();
  const Decision* kv = nullptr;
  for (const auto& d : r.decisions) {
    if (d.phase == TunePhase::kKvCacheType) kv = &d;
  }
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->rule, "a q8_0 cache buys a layer and is faster beyond the noise") << kv->evidence;
  EXPECT_EQ(r.best.type_k, ggml_type::kQ8_0);
}

TEST(TunerTest, NoGpuSkipsPlacementButTunesTheRest) {
  FakeGpuEngine engine;
  TuneOptions o;
  o.ctx = 8192;
  TuneSpace s = Space(engine, o.ctx);
  s.placement_matters = false;
  s.fixed_n = 40;
  s.fits = {};
  s.headroom = {};
  Tuner t(engine, s, o);
  const TuneResult r = t.Run();
  EXPECT_FALSE(r.placement_tuned);
  // Every layer on the host, written as plan and serve write it.
  EXPECT_EQ(r.best.placement.n_gpu_layers, 0);
  EXPECT_EQ(r.best.placement.WrittenNCpuMoe(), -1);
  EXPECT_EQ(r.decisions.front().choice, "-ngl 0");
  EXPECT_EQ(r.best.threads, 6);
  ASSERT_FALSE(r.decisions.empty());
  EXPECT_NE(r.decisions.front().evidence.find("does not change speed"), std::string::npos);
  for (const auto& m : r.measurements) {
    if (m.config.placement.n_cpu_moe != 40) {
      EXPECT_EQ(m.config.placement.n_cpu_moe, 40) << "placement was measured";
      break;
    }
  }
}

TEST(TunerTest, DefaultsWinningWithoutAGpuAreWrittenForTheHost) {
  // The defaults' -ngl 99 changes nothing on an engine without a GPU device:
  // when they win (here by their thread count), the pick keeps the host
  // placement every command for this engine has.
  FakeGpuEngine engine;
  engine.factor = [](const RunConfig& c) { return c.threads == 3 ? 1.5 : 1.0; };
  TuneOptions o;
  o.ctx = 8192;
  TuneSpace s = Space(engine, o.ctx);
  s.placement_matters = false;
  s.fixed_n = 40;
  s.fits = {};
  s.headroom = {};
  s.defaults->threads = 3;
  Tuner t(engine, s, o);
  const TuneResult r = t.Run();
  ASSERT_TRUE(r.defaults_chosen);
  EXPECT_EQ(r.best.threads, 3);
  EXPECT_EQ(r.best.placement.n_gpu_layers, 0);
  EXPECT_EQ(r.best.placement.WrittenNCpuMoe(), -1);
}

// A busy machine: the repetitions of -t 16 run at 1.6x, a tenth and 1x its
// speed in turn (issue 17 item 3: "decode 54.7 t/s (n=2) best; decode 1.1 t/s
// (n=2) tie"), a spread no outlier rule removes.
class WildlySpreadEngine : public FakeGpuEngine {
 public:
  BenchRun Run(const std::vector<RunConfig>& configs, const ProgressCallback& cb = {}) override {
    BenchRun out = FakeGpuEngine::Run(configs, cb);
    for (auto& r : out.results) {
      if (r.config.threads != 16) continue;
      for (size_t i = 0; i < r.samples_ts.size(); ++i) {
        const double f = std::array{1.6, 0.1, 1.0}[i % 3];
        r.samples_ts[i] *= f;
        r.samples_ns[i] = static_cast<int64_t>(static_cast<double>(r.samples_ns[i]) / f);
      }
    }
    return out;
  }
};

TEST(TunerTest, WildlySpreadRepetitionsAreRepeatedThenUndecidedNotATie) {
  WildlySpreadEngine engine;
  TuneOptions o;
  o.ctx = 8192;
  const TuneResult r = Tuner(engine, Space(engine, o.ctx), o).Run();
  const Decision* threads = nullptr;
  for (const auto& d : r.decisions) {
    if (d.phase == TunePhase::kThreads) threads = &d;
  }
  ASSERT_NE(threads, nullptr);
  // The phase says it could not decide, names the spread contender, and
  // keeps the starting value (the space's first thread candidate, 8), not
  // the best mean (6) by a "tie".
  ASSERT_TRUE(threads->undecided.has_value()) << threads->rule << "; " << threads->evidence;
  EXPECT_EQ(threads->undecided->candidate, "-t 16");
  EXPECT_LT(threads->undecided->low * 10, threads->undecided->high);
  EXPECT_EQ(threads->undecided->kept, "-t 8");
  EXPECT_EQ(threads->choice, "-t 8");
  EXPECT_EQ(r.best.threads, 8);
  EXPECT_NE(threads->evidence.find("undecided"), std::string::npos) << threads->evidence;
  // More repetitions were taken of the undecided contender: up to the most allowed.
  std::size_t samples = 0;
  for (const auto& m : r.measurements) {
    if (m.config.threads == 16 && m.config.n_depth == 0 && m.config.n_prompt > 0)
      samples += m.samples_ts.size();
  }
  EXPECT_GT(samples, static_cast<std::size_t>(o.repetitions));
  EXPECT_EQ(samples, static_cast<std::size_t>(o.max_repetitions));
  EXPECT_EQ(threads->undecided->repetitions, o.max_repetitions);
}

// -t 16 is a hundred times slower than the runs before it let the ledger
// expect, and the engine ends a run at the caller's time limit (as llama-bench
// does with its process): the run that overruns the budget is ended there,
// nothing of it is kept, and the notes say so.
class OverrunEngine : public FakeGpuEngine {
 public:
  BenchRun Run(const std::vector<RunConfig>& configs, const ProgressCallback& cb = {}) override {
    BenchRun out = FakeGpuEngine::Run(configs, cb);
    double spent = 0;
    InvocationReport inv;
    for (auto& r : out.results) {
      r.invocation = 0;
      if (r.config.threads == 16) {
        for (auto& ns : r.samples_ns) ns *= 100;
        for (auto& x : r.samples_ts) x /= 100;
      }
      for (int64_t ns : r.samples_ns) spent += static_cast<double>(ns) * 1e-9;
      if (time_limit() && spent > *time_limit()) {
        r.samples_ns.clear();
        r.samples_ts.clear();
        r.failure =
            EngineFailure{FailureKind::kTimeout, "ended at the time limit", "signal 15", {}};
        inv.time_limit_reached = true;
      }
    }
    inv.wall_seconds = time_limit() ? std::min(spent, *time_limit()) : spent;
    out.invocations.push_back(inv);
    return out;
  }
};

TEST(TunerTest, ARunThatOverrunsTheBudgetIsEndedAndNotKept) {
  TuneOptions o;
  o.ctx = 8192;
  FakeGpuEngine plain;
  const double whole = Tuner(plain, Space(plain, o.ctx), o).Run().seconds;
  o.budget_seconds = whole;  // enough for everything, but not for -t 16 a hundred times slower
  OverrunEngine engine;
  const TuneResult r = Tuner(engine, Space(engine, o.ctx), o).Run();
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_LE(r.seconds, o.budget_seconds + 1e-6);
  bool ended = false;
  for (const auto& n : r.notes) ended = ended || n.find("t=16 ub=512 was ended at the") != n.npos;
  EXPECT_TRUE(ended) << (r.notes.empty() ? "" : r.notes.front());
  for (const auto& m : r.measurements) {
    EXPECT_TRUE(m.ok()) << "a run ended by the budget was kept: t=" << m.config.threads;
  }
}

// A run over an RPC host that takes far longer than the runs before it said
// (a host or link slower than announced) is ended at its own limit and kept
// as a failed measurement naming the host, not a wait until the budget ends.
TEST(TunerTest, AnRpcHostSlowerThanItsRunsAnnouncedFailsItsRunByName) {
  TuneOptions o;
  o.ctx = 8192;
  o.budget_seconds = 1e6;
  o.rules.slow_host_floor_seconds = 0.5;  // the fake engine's runs take well under a second
  OverrunEngine engine;                   // -t 16 runs a hundred times slower
  TuneSpace space = Space(engine, o.ctx);
  space.base.rpc = {"10.0.0.2:50052"};
  if (space.defaults) space.defaults->rpc = space.base.rpc;  // as BuildTuneSpace joins them
  const TuneResult r = Tuner(engine, space, o).Run();
  EXPECT_FALSE(r.budget_exhausted);
  int slow = 0;
  for (const auto& m : r.measurements) {
    EXPECT_EQ(m.config.rpc, space.base.rpc);
    if (m.config.threads != 16) {
      EXPECT_TRUE(m.ok()) << m.failure->message;
      continue;
    }
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.failure->kind, FailureKind::kRpcHost);
    EXPECT_EQ(m.failure->rpc_host, "10.0.0.2:50052");
    EXPECT_NE(m.failure->message.find("RPC host 10.0.0.2:50052 is slower than its earlier runs"),
              std::string::npos)
        << m.failure->message;
    ++slow;
  }
  EXPECT_GT(slow, 0);
  EXPECT_NE(r.best.threads, 16);
  // Without hosts the same slow run is only bounded by the budget.
  TuneOptions local = o;
  local.budget_seconds = 1e6;
  OverrunEngine plain;
  const TuneResult l = Tuner(plain, Space(plain, o.ctx), local).Run();
  for (const auto& m : l.measurements) EXPECT_TRUE(m.ok()) << m.failure->message;
}

}  // namespace
}  // namespace moetune
