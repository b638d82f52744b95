#pragma once
/// Test-only helpers (header-only, included by *_test.cc): full-scale model
/// shapes from synth headers and what-if machines for speed-model tests.

#include <gtest/gtest.h>

#include <string>

#include "model/model_info.h"
#include "model/models_test_util.h"
#include "model/synth_sparse.h"
#include "speed/presets.h"
#include "speed/speed_model.h"

namespace moetune {

/// ModelInfo of a synth preset's header (no file, no data).
inline ModelInfo SynthModelInfo(const std::string& preset, const std::string& scale = "full",
                                SynthQuant quant = SynthQuant::kQ4_K_M) {
  ModelInfo m;
  m.path = preset + ".gguf";
  m.gguf = SynthHeaderModel(preset, scale, quant);
  auto a = AnalyzeArchitecture(m.gguf);
  EXPECT_TRUE(a.ok()) << preset;
  if (a.ok()) m.arch = *a;
  m.weights = ComputeWeightMap(m.gguf, m.arch);
  return m;
}

/// Writes a synth preset at full scale, Q4_K_M, as a sparse file at `path`
/// (header and size only); fails the test when it cannot. Returns `path`.
inline std::string WriteSparsePreset(const std::string& preset, const std::string& path) {
  SynthOptions o;
  auto spec = SynthPreset(preset);
  EXPECT_TRUE(spec.ok()) << preset;
  if (!spec.ok()) return path;
  o.spec = *spec;
  o.quant = SynthQuant::kQ4_K_M;
  auto r = WriteSparseSynthModel(o, path);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return path;
}

/// A machine from presets (on top of a generic one); fails the test on a bad name.
inline MachineSpec PresetMachine(const std::string& presets) {
  MachineSpec s = DefaultMachineSpec();
  auto st = ApplyMachinePresets(presets, &s);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message());
  return s;
}

/// Predicts or fails the test.
inline SpeedPrediction MustPredict(const SpeedModel& m, const RunSettings& r) {
  auto p = m.Predict(r);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message());
  return p.ok() ? *p : SpeedPrediction{};
}

inline RunSettings Decode(int n_cpu_moe, int depth = 0, int threads = 8) {
  RunSettings r;
  r.n_cpu_moe = n_cpu_moe;
  r.n_prompt = 0;
  r.n_gen = 128;
  r.n_depth = depth;
  r.threads = threads;
  return r;
}

inline RunSettings Prefill(int n_cpu_moe, int depth = 0, int threads = 8, int ubatch = 512) {
  RunSettings r;
  r.n_cpu_moe = n_cpu_moe;
  r.n_prompt = 512;
  r.n_gen = 0;
  r.n_depth = depth;
  r.threads = threads;
  r.n_ubatch = ubatch;
  return r;
}

}  // namespace moetune
