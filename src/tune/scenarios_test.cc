// Scenario tests: `tune` against an exhaustive grid over the same space, on
// the simulated engine with a full-scale model shape (a sparse synth file) and
// what-if machines. For each scenario the tuner runs, then every configuration
// it could have chosen is measured and read by the same rules (tune/grid_test_util.h),
// and the test asserts:
//   - tune's pick is the grid's pick, or ties with it on the grid's own
//     measurements (Welch's test at 95%, or under 2%) and is safe on the grid's
//     reading of its settings (JudgeAgainstGrid: not rejected; under the safety
//     rule at least one layer more conservative than that curve's edge);
//   - tune made at most a third of the grid's engine runs (tests);
//   - what the scenario is about (the cliff's safe side, the collapsing split
//     avoided, the all-CPU end of a curve that overflows everywhere, ...).
// MOETUNE_SCENARIO_TABLE=FILE writes the table of docs/tune.md.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "engine/sim_engine.h"
#include "speed/presets.h"
#include "speed/speed_test_util.h"
#include "tune/grid_test_util.h"
#include "tune/tune_job.h"
#include "tune/tuner.h"

namespace moetune {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

// The simulated engine's noise depends on the file name (not its folder), so
// every run of these tests sees the same samples.
const std::string& ScenarioDir() {
  static const std::string dir =
      ::testing::TempDir() + "moetune-scenarios-" + std::to_string(::getpid());
  return dir;
}

const std::string& ModelPath() {
  static const std::string path = [] {
    std::filesystem::create_directories(ScenarioDir());
    return WriteSparsePreset("qwen3moe", ScenarioDir() + "/qwen3moe-q4_k_m.gguf");
  }();
  return path;
}

// Another synth preset's sparse file, written once.
std::string PresetPath(const std::string& preset) {
  static std::map<std::string, std::string> paths;
  auto it = paths.find(preset);
  if (it == paths.end()) {
    std::filesystem::create_directories(ScenarioDir());
    it = paths
             .emplace(preset,
                      WriteSparsePreset(preset, ScenarioDir() + "/" + preset + "-q4_k_m.gguf"))
             .first;
  }
  return it->second;
}

struct Scenario {
  std::string name;
  std::string machine;  // presets
  SpillMode spill = SpillMode::kStrict;
  int64_t vram = 0;  // free VRAM; 0 = the preset's
  int64_t ctx = 8192;
  std::string preset = "qwen3moe";  // the model's synth preset
};

// MOETUNE_SCENARIO_SEED=N runs the scenarios with another noise seed (default 1).
uint64_t Seed() {
  const char* s = std::getenv("MOETUNE_SCENARIO_SEED");
  return s != nullptr && *s != '\0' ? std::strtoull(s, nullptr, 10) : 1;
}

struct Outcome {
  TuneSpace space;
  TuneResult tune;
  std::size_t tune_runs = 0, tune_samples = 0;
  GridResult grid;
  GridVerdict verdict;
};

Outcome RunScenario(const Scenario& sc) {
  MachineSpec m = DefaultMachineSpec();
  EXPECT_TRUE(ApplyMachinePresets(sc.machine, &m).ok()) << sc.machine;
  m.spill = sc.spill;
  if (sc.vram > 0 && m.accel()) m.accel()->vram_free = sc.vram;
  auto model = LoadModelInfo(sc.preset == "qwen3moe" ? ModelPath() : PresetPath(sc.preset));
  EXPECT_TRUE(model.ok());
  // The space as `moetune tune --engine sim` builds it (tune/tune_job.h).
  const TuneMachine machine = TuneMachineFromSpec(m, CalibrationConstants{});
  TuneJobRequest request;
  request.model = &*model;
  request.ctx = sc.ctx;
  Outcome out;
  out.space = TuneJobSpace(request, machine, nullptr);
  TuneOptions o;
  o.ctx = sc.ctx;
  o.budget_seconds = 1e9;
  SimEngineOptions so;
  so.machine = m;
  so.seed = Seed();
  {
    SimEngine engine(so);
    Tuner t(engine, out.space, o);
    out.tune = t.Run();
    out.tune_runs = t.measured();
    for (const auto& r : out.tune.measurements)
      out.tune_samples += static_cast<std::size_t>(std::max(1, r.config.repetitions));
  }
  SimEngine grid_engine(so);  // the same seed: the same first samples per configuration
  out.grid = RunExhaustiveGrid(grid_engine, out.space, o);
  out.verdict = JudgeAgainstGrid(out.grid, out.tune.best);
  return out;
}

// The table rows, written at the end when MOETUNE_SCENARIO_TABLE is set.
std::vector<std::string>& Rows() {
  static std::vector<std::string> rows;
  return rows;
}

class TableWriter : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(ScenarioDir(), ec);
    const char* path = std::getenv("MOETUNE_SCENARIO_TABLE");
    if (path == nullptr || *path == '\0' || Rows().empty()) return;
    std::ofstream f(path);
    f << "| scenario | machine (simulated) | ctx | tune pick | tune runs (samples) | grid pick | "
         "grid runs (samples) | tune/grid runs | verdict | noise-free objective, tune/grid |\n"
         "|---|---|--:|---|--:|---|--:|--:|---|--:|\n";
    for (const auto& r : Rows()) f << r << "\n";
  }
};
const auto* const kTableWriter = ::testing::AddGlobalTestEnvironment(new TableWriter);

// The assertions every scenario shares; records the table row.
void CheckAgainstGrid(const Scenario& sc, const Outcome& o) {
  ASSERT_TRUE(o.grid.pick.has_value()) << sc.name << ": the grid found nothing usable";
  const GridSlice& g = o.grid.slices[*o.grid.pick];
  EXPECT_TRUE(o.verdict.accepted()) << sc.name << ": " << o.verdict.explanation;
  EXPECT_LE(o.tune_runs * 3, o.grid.runs)
      << sc.name << ": tune " << o.tune_runs << " runs, grid " << o.grid.runs;
  EXPECT_FALSE(o.tune.budget_exhausted);
  const std::string verdict = o.verdict.exact ? "same pick"
                              : o.verdict.accepted()
                                  ? "tie on the grid's data; safe on its curve (edge N=" +
                                        std::to_string(o.verdict.slice_edge) + ")"
                                  : "REJECTED: " + o.verdict.explanation;
  Rows().push_back(fmt::format(
      "| {} | {}{}{}{} | {} | `{}` | {} ({}) | `{}` | {} ({}) | {:.1f}% | {} | {} |", sc.name,
      sc.machine, sc.spill == SpillMode::kSilent ? ", silent spill" : ", strict",
      sc.vram > 0 ? fmt::format(", {} GiB free", sc.vram / kGiB) : "",
      sc.preset == "qwen3moe" ? "" : ", model " + sc.preset, sc.ctx,
      DescribeSettings(SettingsOf(o.space, o.tune.best), &o.space), o.tune_runs, o.tune_samples,
      DescribeSettings(g.settings, &o.space), o.grid.runs, o.grid.samples,
      100.0 * static_cast<double>(o.tune_runs) / static_cast<double>(o.grid.runs), verdict,
      o.verdict.predicted_ratio ? fmt::format("{:.2f}", *o.verdict.predicted_ratio) : "-"));
}

// The grid's reading of the curve with the tune pick's settings.
const GridSlice& PickSlice(const Outcome& o) {
  TuneSettings want = SettingsOf(o.space, o.tune.best);
  for (const auto& s : o.grid.slices) {
    TuneSettings other = s.settings;
    other.n = want.n;
    if (other == want) return s;
  }
  ADD_FAILURE() << "the tune pick's settings are not in the grid";
  return o.grid.slices.front();
}

std::set<int> RejectedFor(const Analysis& a, RejectionKind kind) {
  std::set<int> out;
  for (const auto& r : a.rejected) {
    if (r.kind == kind) out.insert(r.n_cpu_moe);
  }
  return out;
}

TEST(TuneScenarios, EverythingFitsOnTheGpu) {
  const Scenario sc{"(a) everything fits", "rtx4090-24g,ddr5-6000-2ch,8c16t", SpillMode::kStrict, 0,
                    8192};
  const Outcome o = RunScenario(sc);
  CheckAgainstGrid(sc, o);
  // Every expert on the GPU, or one layer safer under the safety rule.
  EXPECT_LE(o.tune.best.placement.n_cpu_moe, 1);
  EXPECT_LE(o.grid.slices[*o.grid.pick].settings.n, 1);
}

TEST(TuneScenarios, CliffOnASilentSpillMachine) {
  const Scenario sc{"(b) a cliff", "rtx4070-12g,ddr4-3200-2ch,8c16t", SpillMode::kSilent, 0, 4096};
  const Outcome o = RunScenario(sc);
  CheckAgainstGrid(sc, o);
  const Analysis& a = PickSlice(o).analysis;
  ASSERT_EQ(a.shape, CurveShape::kCliff) << RecommendationRuleName(a.recommendation.rule);
  ASSERT_FALSE(a.cliffs.empty());
  // On the safe side of the cliff, and the tune saw the cliff too.
  EXPECT_GE(o.tune.best.placement.n_cpu_moe, a.cliffs.front().n_cpu_moe_safe);
  EXPECT_EQ(o.tune.analysis.shape, CurveShape::kCliff);
  // The judge can say no: the collapsed side of the cliff, or the edge itself
  // under the safety rule, is not an acceptable pick.
  ServerConfig unsafe = o.tune.best;
  unsafe.placement.n_cpu_moe = a.cliffs.front().n_cpu_moe_collapsed;
  EXPECT_FALSE(JudgeAgainstGrid(o.grid, unsafe).accepted());
  if (a.recommendation.rule == RecommendationRule::kSafetyRule) {
    unsafe.placement.n_cpu_moe = a.recommendation.edge;
    EXPECT_FALSE(JudgeAgainstGrid(o.grid, unsafe).accepted());
  }
}

TEST(TuneScenarios, OverflowEverywhereIsMonotonic) {
  const Scenario sc{"(c) overflow everywhere", "rtx4070-12g,ddr4-3200-2ch,8c16t",
                    SpillMode::kSilent, kGiB, 4096};
  const Outcome o = RunScenario(sc);
  CheckAgainstGrid(sc, o);
  const Analysis& a = PickSlice(o).analysis;
  EXPECT_EQ(a.shape, CurveShape::kMonotonic);
  EXPECT_EQ(a.recommendation.rule, RecommendationRule::kEverySplitOverflows);
  // Every expert stays on the CPU.
  EXPECT_EQ(o.tune.best.placement.n_cpu_moe, o.space.n_layer);
}

TEST(TuneScenarios, SplitThatCollapsesAt32kIsNotPicked) {
  const Scenario sc{"(d) collapses at 32K", "rtx4070-12g,ddr4-3200-2ch,8c16t", SpillMode::kSilent,
                    0, 32768};
  const Outcome o = RunScenario(sc);
  CheckAgainstGrid(sc, o);
  const Analysis& a = PickSlice(o).analysis;
  const std::set<int> collapsed = RejectedFor(a, RejectionKind::kCollapses);
  ASSERT_FALSE(collapsed.empty()) << "no split collapses with depth on this machine";
  // The split that is best at short context (depth 0) collapses at depth ...
  const auto& base = a.curves.front().points;
  const CurvePoint* best0 = nullptr;
  for (const auto& p : base) {
    if (p.objective && !RejectedFor(a, RejectionKind::kBeyondCliff).count(p.n_cpu_moe) &&
        (!best0 || p.objective->mean > best0->objective->mean))
      best0 = &p;
  }
  ASSERT_NE(best0, nullptr);
  EXPECT_TRUE(collapsed.count(best0->n_cpu_moe)) << "N=" << best0->n_cpu_moe;
  // ... and tune, at --ctx 32K, picks none of the collapsing splits.
  EXPECT_GT(o.tune.best.placement.n_cpu_moe, *collapsed.rbegin());
  bool said = false;
  for (const auto& d : o.tune.decisions)
    said = said || (d.phase == TunePhase::kLongContext &&
                    std::any_of(d.depth_checks.begin(), d.depth_checks.end(),
                                [](const DepthCheck& c) { return c.collapsed; }));
  EXPECT_TRUE(said) << "the long-context decision does not name the collapse";
}

TEST(TuneScenarios, HybridCpuThreadCount) {
  const Scenario sc{"(e) hybrid CPU 8P+16E", "rtx4060ti-16g,ddr5-6000-2ch,8p16e",
                    SpillMode::kStrict, 0, 8192};
  const Outcome o = RunScenario(sc);
  // The candidates come from the what-if topology: P-cores only, every
  // physical core, every logical CPU, one core left free.
  std::set<int> threads;
  for (const auto& t : o.space.threads) threads.insert(t.threads);
  EXPECT_EQ(threads, (std::set<int>{8, 23, 24, 32}));
  CheckAgainstGrid(sc, o);
  bool measured = false;
  for (const auto& d : o.tune.decisions)
    measured = measured ||
               (d.phase == TunePhase::kThreads && d.evidence.find("-t 8 ") != std::string::npos &&
                d.evidence.find("-t 32 ") != std::string::npos);
  EXPECT_TRUE(measured) << "the thread decision does not compare the candidates";
}

TEST(TuneScenarios, StrictOverFullPlacementsFailToLoad) {
  const Scenario sc{"(f) strict: over-full fails", "rtx4070-12g,ddr4-3200-2ch,8c16t",
                    SpillMode::kStrict, 0, 16384};
  const Outcome o = RunScenario(sc);
  CheckAgainstGrid(sc, o);
  const Analysis& a = PickSlice(o).analysis;
  std::set<int> failed = RejectedFor(a, RejectionKind::kFailed);
  const std::set<int> deep = RejectedFor(a, RejectionKind::kFailsAtDepth);
  failed.insert(deep.begin(), deep.end());
  ASSERT_FALSE(failed.empty()) << "nothing failed to load on this machine";
  ASSERT_FALSE(deep.empty()) << "nothing fails only at the target context";
  // Above every placement that fails to load, at depth 0 or at the target context.
  EXPECT_GT(o.tune.best.placement.n_cpu_moe, *failed.rbegin());
}

// Several devices: the defaults' objective and the pick's on the grid's data,
// and the pick's placement across the devices.
void CheckAcrossDevices(const Scenario& sc, const Outcome& o) {
  ASSERT_GE(o.space.devices.size(), 2u) << sc.name;
  ASSERT_FALSE(o.space.device_splits.empty());
  // The pick says where every layer goes: -dev, -ts as layer counts, and the
  // experts on the CPU shared out over the devices.
  const Placement& p = o.tune.best.placement;
  ASSERT_EQ(p.devices.size(), o.space.devices.size());
  int layers = 0;
  for (const auto& d : p.devices) layers += d.layers;
  EXPECT_EQ(layers, o.space.n_layer + 1);  // the output head counts on the last device
  EXPECT_EQ(p.cpu_experts, CpuExpertsFrom::kPerDevice);
  // Never behind llama.cpp's own split over the same devices.
  ASSERT_TRUE(o.tune.versus_defaults.has_value());
  const auto& vs = *o.tune.versus_defaults;
  EXPECT_TRUE(vs.defaults.placement.devices.empty());  // llama.cpp splits by free memory
  ASSERT_TRUE(vs.tuned_objective && vs.default_objective);
  EXPECT_GE(vs.tuned_objective->mean, vs.default_objective->mean * 0.98)
      << sc.name << ": the pick is behind the defaults";
}

TEST(TuneScenarios, TwoDifferentGpus) {
  const Scenario sc{"(g) two different GPUs",
                    "rtx3090-24g,rtx3060-12g,ddr4-3200-2ch,8c16t",
                    SpillMode::kStrict,
                    0,
                    16384,
                    "glm4moe"};
  const Outcome o = RunScenario(sc);
  CheckAgainstGrid(sc, o);
  CheckAcrossDevices(sc, o);
  // The model does not fit both cards: some experts stay on the CPU, and the
  // 24 GB card holds more layers than the 12 GB one.
  EXPECT_GT(o.tune.best.placement.n_cpu_moe, 0);
  const auto& d = o.tune.best.placement.devices;
  const size_t big = d[0].device == "CUDA0" ? 0 : 1;
  EXPECT_GT(d[big].layers, d[1 - big].layers);
  // Both orders of the cards were open to the tune (the grid measured both).
  EXPECT_EQ(o.space.other_orders.size(), 1u);
  EXPECT_TRUE(std::any_of(o.tune.decisions.begin(), o.tune.decisions.end(),
                          [](const Decision& x) { return x.phase == TunePhase::kDeviceOrder; }));
}

TEST(TuneScenarios, AGpuAndAnRpcHostBehindASlowLink) {
  const Scenario sc{"(h) GPU + RPC host on 1 GbE",
                    "rtx3090-24g,ddr4-3200-2ch,8c16t,rpc-1gbe",
                    SpillMode::kStrict,
                    0,
                    8192,
                    "glm4moe"};
  const Outcome o = RunScenario(sc);
  CheckAgainstGrid(sc, o);
  CheckAcrossDevices(sc, o);
  // llama.cpp's order (the RPC host first) keeps the output head on the local
  // GPU: its logits (n_vocab floats a token) never cross the 1 GbE link. The
  // tune measured the other order, and the grid agrees it is slower.
  ASSERT_EQ(o.space.devices.front().name, "RPC0");
  ASSERT_EQ(o.space.other_orders.size(), 1u);
  EXPECT_EQ(o.tune.best.placement.devices.back().device, "CUDA0");
  const Decision* order = nullptr;
  for (const auto& d : o.tune.decisions)
    if (d.phase == TunePhase::kDeviceOrder) order = &d;
  ASSERT_NE(order, nullptr);
  EXPECT_NE(order->evidence.find("-dev CUDA0,RPC0"), std::string::npos) << order->evidence;
  std::optional<double> best[2];
  for (const auto& slice : o.grid.slices) {
    auto& b = best[slice.settings.device_order];
    if (slice.usable && (!b || slice.objective->mean > *b)) b = slice.objective->mean;
  }
  ASSERT_TRUE(best[0] && best[1]);
  EXPECT_GT(*best[0], *best[1] * 1.02) << "the output head behind the link is not slower";
}

}  // namespace
}  // namespace moetune
