#pragma once
/// Test support: conversations served by the simulated engine
/// (engine/sim_engine.h) on a what-if machine in silent-spill mode, so that
/// the overflow rule is tested on the signature the speed model predicts for a
/// GPU that overflows into host memory, for real model shapes.
///
/// Each request of a conversation is two simulated llama-bench tests: a
/// prefill of the turn's new tokens with the context so far already in the
/// cache, and a decode of the answer after it, with the server's context (-c)
/// allocated. In silent mode managed memory becomes resident when touched, so
/// the KV cells in use grow with the conversation and a placement that fits at
/// depth 0 spills once the touched bytes pass the budget (docs/speed-model.md).
///
/// Scenarios are built from the memory the placement touches
/// (speed/gpu_footprint.h), not from hand-picked numbers:
/// - `tuned`: the machine as tune saw it (nothing else on the GPU); the
///   placement is the most GPU-heavy one that holds the whole conversation;
/// - `in_use`: another program holds just enough VRAM that the same placement
///   spills from `onset` tokens of context (0: from the first request);
/// - `fixed`: on the in-use machine, the most GPU-heavy placement that holds
///   the whole conversation again (what the fix leads to).

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/sim_engine.h"
#include "speed/gpu_footprint.h"
#include "speed/model_shape.h"
#include "speed/presets.h"
#include "speed/speed_test_util.h"
#include "watch/baseline.h"
#include "watch/prediction.h"
#include "watch/trace_test_util.h"

namespace moetune::testing {

/// A full-scale synth preset (Q4_K_M) as a sparse file, written once per
/// process into a folder of its own (the file name is the preset's, so the
/// simulated engine's noise is the same in every run).
inline std::string SparsePresetModel(const std::string& preset) {
  const std::string dir =
      ::testing::TempDir() + "moetune_watch_sim_" + std::to_string(::getpid()) + "/";
  std::string p = dir + preset + ".gguf";
  if (::access(p.c_str(), R_OK) == 0) return p;
  // Removed when the test process ends.
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  };
  static const Cleanup cleanup{dir};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return WriteSparsePreset(preset, p);
}

/// One plan cache for every simulated engine of the tests (the sparse files
/// are written once and never change).
inline std::shared_ptr<SimPlanCache> SharedSimPlans() {
  static const auto plans = std::make_shared<SimPlanCache>();
  return plans;
}

/// A simulated llama-server: model, machine, and its settings.
struct SimServer {
  std::string model;
  MachineSpec machine;
  int n_cpu_moe = 0;
  int n_ctx = 32768;
  int n_ubatch = 512;
  int threads = 8;

  /// The llama-server command this stands for.
  std::vector<std::string> Argv() const {
    return {"llama-server",
            "-m",
            model,
            "-ngl",
            "99",
            "--n-cpu-moe",
            std::to_string(n_cpu_moe),
            "-c",
            std::to_string(n_ctx),
            "-ub",
            std::to_string(n_ubatch),
            "-t",
            std::to_string(threads),
            "-fa",
            "on",
            "-fit",
            "off"};
  }
  RunConfig Config(int n_depth, int n_prompt, int n_gen) const {
    RunConfig c;
    c.model = model;
    c.placement.n_cpu_moe = n_cpu_moe;
    c.ctx_size = n_ctx;
    c.n_ubatch = n_ubatch;
    c.flash_attn = FlashAttn::kOn;
    c.threads = threads;
    c.n_depth = n_depth;
    c.n_prompt = n_prompt;
    c.n_gen = n_gen;
    c.repetitions = 1;
    return c;
  }
};

/// A simulated engine on `server`'s machine with the shared plan cache.
inline SimEngine SimEngineFor(const SimServer& server, uint64_t seed) {
  SimEngineOptions o;
  o.machine = server.machine;
  o.seed = seed;
  o.plans = SharedSimPlans();
  return SimEngine(o);
}

/// Bytes `n_cpu_moe` touches on `accel` with `cells` KV cells in use of a
/// `n_ctx` context.
inline int64_t TouchedGpuBytes(const ModelInfo& m, const ModelShape& shape, FootprintPlans& plans,
                               const AcceleratorSpec& accel, int n_cpu_moe, int n_ctx, int cells) {
  auto res = ResolveResidency(m, shape, 99, n_cpu_moe, "", true);
  EXPECT_TRUE(res.ok());
  if (!res.ok()) return 0;
  RunSettings r;
  r.n_cpu_moe = n_cpu_moe;
  r.n_ctx = n_ctx;
  r.n_prompt = 0;
  r.n_gen = 0;
  r.n_depth = cells;
  return ComputeGpuFootprint(m, shape, *res, r, &accel, &plans).touched();
}

struct SimScenario {
  std::string preset;
  SimServer tuned, in_use, fixed;
  int onset = 0;
};

/// The scenario for `preset` on `machine` (a what-if preset list), spilling
/// from `onset` tokens on the in-use machine, for conversations up to
/// `max_depth` tokens.
inline SimScenario MakeScenario(const std::string& preset, const std::string& machine, int onset,
                                int max_depth = 24000, int n_ctx = 32768) {
  SimScenario s;
  s.preset = preset;
  s.onset = onset;
  SimServer base;
  base.model = SparsePresetModel(preset);
  base.n_ctx = n_ctx;
  base.machine = DefaultMachineSpec();
  EXPECT_TRUE(ApplyMachinePresets(machine, &base.machine).ok()) << machine;
  base.machine.spill = SpillMode::kSilent;
  auto m = LoadModelInfo(base.model);
  EXPECT_TRUE(m.ok());
  if (!m.ok()) return s;
  const int n_layer = static_cast<int>(m->arch.hp.n_layer);
  const ModelShape shape = BuildModelShape(*m);
  FootprintPlans plans;
  auto touched = [&](int n, int cells) {
    return TouchedGpuBytes(*m, shape, plans, *base.machine.accel(), n, n_ctx, cells);
  };
  auto smallest_fitting = [&](int64_t budget, int cells) {
    for (int n = 0; n <= n_layer; ++n) {
      if (touched(n, cells) <= budget) return n;
    }
    return n_layer;
  };
  const int64_t free = base.machine.VramBudget();
  s.tuned = base;
  s.tuned.n_cpu_moe = smallest_fitting(free, max_depth);
  s.in_use = s.tuned;
  // Another program holds what is left above the placement at `onset`.
  s.in_use.machine.reserve = free - touched(s.tuned.n_cpu_moe, onset);
  EXPECT_GE(s.in_use.machine.reserve, 0);
  s.fixed = s.in_use;
  s.fixed.n_cpu_moe = smallest_fitting(s.in_use.machine.VramBudget(), max_depth);
  return s;
}

/// A conversation served by `server` on the simulated engine (seeded), with
/// extra log-normal spread `noise` per request (a machine shared with other
/// work); `spilled[i]` says whether request i's prefill spilled.
struct SimConversation {
  Conversation conversation;
  std::vector<bool> spilled;
  int FirstSpilled() const {
    auto it = std::find(spilled.begin(), spilled.end(), true);
    return it == spilled.end() ? -1 : static_cast<int>(it - spilled.begin());
  }
};

inline SimConversation SimConverse(const SimServer& server, const std::vector<Turn>& turns,
                                   uint64_t seed, double noise = 0.0) {
  std::vector<RunConfig> configs;
  int depth = 0;
  for (const auto& t : turns) {
    configs.push_back(server.Config(depth, t.prompt, 0));
    configs.push_back(server.Config(depth + t.prompt, 0, t.answer));
    depth += t.prompt + t.answer - 1;
  }
  SimEngine engine = SimEngineFor(server, seed);
  const BenchRun run = engine.Run(configs);
  std::mt19937 rng(static_cast<unsigned>(seed * 7919 + 17));
  std::normal_distribution<double> n01(0, 1);
  SimConversation out;
  double t = 1;
  depth = 0;
  for (std::size_t i = 0; i < turns.size(); ++i) {
    const RunResult& pp = run.results[2 * i];
    const RunResult& tg = run.results[2 * i + 1];
    EXPECT_TRUE(pp.ok() && tg.ok()) << "request " << i;
    if (!pp.ok() || !tg.ok()) break;
    Request r;
    r.t = t;
    r.depth_start = depth;
    r.turn = turns[i];
    r.prompt_s = static_cast<double>(pp.samples_ns.at(0)) * 1e-9 * std::exp(noise * n01(rng));
    r.answer_s = static_cast<double>(tg.samples_ns.at(0)) * 1e-9 * std::exp(noise * n01(rng));
    depth += turns[i].prompt + turns[i].answer - 1;
    r.n_tokens_end = depth;
    t += r.prompt_s + r.answer_s + 2;
    out.conversation.requests.push_back(r);
    out.spilled.push_back(pp.record.value("spill_bytes", int64_t{0}) > 0);
  }
  return out;
}

/// What tune would have measured for `server`: simulated llama-bench pp512
/// and tg128 at `depths`, 5 repetitions, their means.
inline std::shared_ptr<const Baseline> SimMeasured(const SimServer& server,
                                                   const std::vector<int>& depths, uint64_t seed) {
  std::vector<RunConfig> configs;
  for (int d : depths) {
    for (bool pp : {true, false}) {
      RunConfig c = server.Config(d, pp ? 512 : 0, pp ? 0 : 128);
      c.ctx_size = 0;  // llama-bench sizes its own context
      c.repetitions = 5;
      configs.push_back(c);
    }
  }
  SimEngine engine = SimEngineFor(server, seed);
  const BenchRun run = engine.Run(configs);
  std::vector<BaselinePoint> pts;
  for (std::size_t i = 0; i < depths.size(); ++i) {
    const RunResult& pp = run.results[2 * i];
    const RunResult& tg = run.results[2 * i + 1];
    EXPECT_TRUE(pp.ok() && tg.ok());
    EXPECT_EQ(pp.record.value("spill_bytes", int64_t{0}), 0) << "tune saw a spill";
    pts.push_back({depths[i], pp.avg_ts, tg.avg_ts});
  }
  auto b = std::make_shared<CurveBaseline>(pts, "simulated tune");
  b->n_cpu_moe = server.n_cpu_moe;
  return b;
}

/// The speed model's prediction for `server`'s command on its machine (the
/// baseline `watch` uses when a machine profile is known).
inline std::shared_ptr<const Baseline> SimPredicted(const SimServer& server) {
  ServerPredictor p;
  auto m = LoadModelInfo(server.model);
  EXPECT_TRUE(m.ok());
  if (!m.ok()) return nullptr;
  p.model = std::make_shared<const ModelInfo>(std::move(m).value());
  p.machine = server.machine;
  auto b = PredictServer(p, SettingsFromArgv(server.Argv()), std::nullopt, nullptr);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().message());
  if (!b.ok()) return nullptr;
  return std::shared_ptr<const Baseline>(std::move(b).value());
}

/// An agent's session: `n` turns of 200 to 1,400 new tokens (tool output,
/// often less than a micro-batch) and 20 to 200 generated.
inline std::vector<Turn> AgentTurns(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> prompt(200, 1400), answer(20, 200);
  std::vector<Turn> out;
  out.reserve(static_cast<size_t>(std::max(n, 0)));
  for (int i = 0; i < n; ++i) out.push_back({prompt(rng), answer(rng)});
  return out;
}

}  // namespace moetune::testing
