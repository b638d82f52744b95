#include "tune/tune_job.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "config/server_argv.h"
#include "engine/sim_engine.h"
#include "speed/presets.h"
#include "speed/speed_test_util.h"
#include "tune/journal.h"
#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

using testing::TempDir;

// The what-if machine of a small GPU, as the simulated engine sees it and as
// the tune job is told about it.
struct SimMachine {
  MachineSpec spec;
  TuneMachine machine;
};

SimMachine SmallGpu() {
  SimMachine s;
  s.spec = DefaultMachineSpec();
  EXPECT_TRUE(ApplyMachinePresets("rtx4070-12g,ddr4-3200-2ch,8c16t", &s.spec).ok());
  TuneMachine& m = s.machine;
  m.has_gpu = s.spec.has_gpu();
  m.cpu = SimulatedCpuTopology(s.spec.cpu);
  m.vram_free = s.spec.accel()->vram_free;
  m.simulated = true;
  m.engine_line = "simulated";
  m.machine_line = "SIMULATED " + s.spec.Describe();
  m.identity.engine = "sim seed 1";
  m.identity.machine = m.machine_line;
  m.notes = {"SIMULATED: from the speed model"};
  return s;
}

// A small MoE model in a temporary folder, the machine, and a request for it.
class TuneJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path = WriteSparsePreset("qwen3moe", dir.File("qwen3moe.gguf"));
    auto m = LoadModelInfo(path);
    ASSERT_TRUE(m.ok()) << m.error().message();
    model = std::move(m).value();
    sim = SmallGpu();
    so.machine = sim.spec;
    q.model_path = path;
    q.model = &model;
  }
  TempDir dir;
  std::string path;
  ModelInfo model;
  SimMachine sim;
  SimEngineOptions so;
  TuneJobRequest q;
};

TEST_F(TuneJobTest, TunesFillsTheReportAndResumesFromItsJournal) {
  q.ctx = 8192;
  q.budget_seconds = 3600;  // a whole tune (about 1200 simulated seconds), then its resume
  q.journal_path = dir.File("cache/tune.journal");  // its folder is created
  q.reproduce = {"moetune tune qwen3moe.gguf --ctx 8192"};
  std::vector<std::string> early_notes;
  TuneJobHooks hooks;
  hooks.before_measuring = [&](const std::vector<std::string>& n) { early_notes = n; };

  SimEngine engine(so);
  auto first = RunTuneJob(q, sim.machine, engine, hooks);
  ASSERT_TRUE(first.ok()) << first.error().message();
  const TuneReport& r = first->report;
  EXPECT_FALSE(first->journal_error);
  EXPECT_EQ(r.model_path, path);
  EXPECT_EQ(r.model_name, model.arch.hp.name);
  EXPECT_EQ(r.ctx, 8192);
  EXPECT_TRUE(r.simulated);
  EXPECT_EQ(r.machine, sim.machine.machine_line);
  EXPECT_EQ(r.vram_budget, sim.machine.vram_free);
  EXPECT_EQ(r.journal, q.journal_path);
  EXPECT_EQ(r.reproduce, q.reproduce);
  ASSERT_FALSE(r.Command().empty());
  EXPECT_EQ(r.result.best.ctx_size, 8192);
  EXPECT_TRUE(r.result.memory.has_value());  // the pick's own memory map
  EXPECT_GT(r.result.measured, 0u);
  EXPECT_TRUE(std::filesystem::exists(q.journal_path));
  // Ollama's whole-layer split of the same GPU, measured alike (-ngl K, no expert placement).
  ASSERT_TRUE(r.result.versus_ollama.has_value());
  const DefaultsComparison& ollama = *r.result.versus_ollama;
  EXPECT_LT(ollama.defaults.placement.n_gpu_layers, static_cast<int>(model.weights.layers.size()));
  EXPECT_EQ(ollama.defaults.placement.n_cpu_moe, -1);
  EXPECT_NE(ollama.how.find("whole layers"), std::string::npos) << ollama.how;
  ASSERT_TRUE(ollama.default_seconds_depth0 && ollama.tuned_seconds_depth0);
  // The same pick figures as the comparison with llama.cpp's defaults.
  ASSERT_TRUE(r.result.versus_defaults.has_value());
  EXPECT_EQ(ollama.tuned_seconds_depth0, r.result.versus_defaults->tuned_seconds_depth0);
  // On a 12 GB card a 30B-A3B model's whole layers lose to the experts on the CPU.
  EXPECT_LT(*ollama.tuned_seconds_depth0, *ollama.default_seconds_depth0);
  // The caller's notes come first, and were told before the first measurement.
  ASSERT_FALSE(early_notes.empty());
  EXPECT_EQ(early_notes.front(), "SIMULATED: from the speed model");
  ASSERT_FALSE(r.result.notes.empty());
  EXPECT_EQ(r.result.notes.front(), early_notes.front());

  // The same job again measures nothing new: every result is resumed.
  SimEngine again(so);
  auto second = RunTuneJob(q, sim.machine, again, hooks);
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_EQ(second->report.result.measured, 0u);
  EXPECT_GT(second->report.result.resumed, 0u);
  EXPECT_EQ(second->report.result.best, r.result.best);
}

TEST_F(TuneJobTest, AJournalOfAnotherMachineIsRefusedAndNoModelIsAnError) {
  q.ctx = 4096;
  q.budget_seconds = 1;  // a first placement round is enough to write the journal
  q.journal_path = dir.File("tune.journal");
  SimEngine engine(so);
  ASSERT_TRUE(RunTuneJob(q, sim.machine, engine).ok());
  TuneMachine other = sim.machine;
  other.identity.machine = "SIMULATED another GPU";
  auto refused = RunTuneJob(q, other, engine);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("another GPU"), std::string::npos)
      << refused.error().message();

  q.model = nullptr;
  EXPECT_FALSE(RunTuneJob(q, sim.machine, engine).ok());
}

// The note the budget leaves when it ends a tune, or "" when none did.
std::string BudgetNote(const TuneResult& r) {
  for (const auto& n : r.notes) {
    if (n.rfind("the budget ended the tune: ", 0) == 0) return n;
  }
  return "";
}

// Issue 17 item 4: `tune --budget 2` ran 401 s. A run that would end past the
// budget is not started (its expected time from the runs so far, or the speed
// model before the first), and the notes name it.
TEST_F(TuneJobTest, TheBudgetIsALimitNotAStartingGate) {
  q.ctx = 8192;
  sim.machine.spec = sim.spec;  // the speed model predicts the first runs
  q.budget_seconds = 3600;      // the whole tune first (about 1200 simulated seconds)
  SimEngine unlimited(so);
  auto full = RunTuneJob(q, sim.machine, unlimited);
  ASSERT_TRUE(full.ok()) << full.error().message();
  ASSERT_FALSE(full->report.result.budget_exhausted);
  const double whole = full->report.result.seconds;

  for (double budget : {whole / 3, whole * 2 / 3}) {
    q.budget_seconds = budget;
    SimEngine engine(so);
    auto job = RunTuneJob(q, sim.machine, engine);
    ASSERT_TRUE(job.ok()) << job.error().message();
    const TuneResult& r = job->report.result;
    EXPECT_TRUE(r.budget_exhausted);
    EXPECT_GT(r.measured, 0u);
    // Never past the budget: the run that would overrun was not started.
    EXPECT_LE(r.seconds, budget) << "budget " << budget;
    const std::string note = BudgetNote(r);
    EXPECT_NE(note.find("was not started: it would take about"), std::string::npos) << note;
    EXPECT_NE(note.find(" N="), std::string::npos) << note;  // the run, named
  }
}

TEST_F(TuneJobTest, ABudgetShorterThanTheFirstRunStartsNothing) {
  q.ctx = 8192;
  q.budget_seconds = 2;
  sim.machine.spec = sim.spec;
  SimEngine engine(so);
  auto job = RunTuneJob(q, sim.machine, engine);
  ASSERT_TRUE(job.ok()) << job.error().message();
  const TuneResult& r = job->report.result;
  EXPECT_TRUE(r.budget_exhausted);
  EXPECT_EQ(r.measured, 0u);
  EXPECT_LE(r.seconds, 2.0);
  const std::string note = BudgetNote(r);
  EXPECT_NE(note.find("s of the 2 s budget were left"), std::string::npos) << note;
}

// The journal says the budget ended the tune, and a tune resumed from it (with
// more time) takes every measurement from it and goes on.
TEST_F(TuneJobTest, TheJournalRecordsTheBudgetAndStillResumes) {
  q.ctx = 8192;
  q.budget_seconds = 120;
  q.journal_path = dir.File("tune.journal");
  sim.machine.spec = sim.spec;
  SimEngine engine(so);
  auto first = RunTuneJob(q, sim.machine, engine);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(first->report.result.budget_exhausted);
  ASSERT_GT(first->report.result.measured, 0u);
  std::vector<std::string> notes;
  {
    JournalIdentity id = sim.machine.identity;
    id.model = ModelFingerprint(model);
    auto j = Journal::Open(q.journal_path, id, &notes);
    ASSERT_TRUE(j.ok()) << j.error().message();
    EXPECT_EQ((*j)->budget_stops(), 1u);
    EXPECT_EQ((*j)->resumed(), first->report.result.measured);
  }
  q.budget_seconds = 1e9;
  SimEngine again(so);
  auto second = RunTuneJob(q, sim.machine, again);
  ASSERT_TRUE(second.ok()) << second.error().message();
  const TuneResult& r = second->report.result;
  EXPECT_EQ(r.resumed, first->report.result.measured);
  EXPECT_GT(r.measured, 0u);
  EXPECT_FALSE(r.budget_exhausted);
  EXPECT_EQ(BudgetNote(r), "");
}

TEST(TuneJobPathTest, DefaultJournalPathFollowsTheCacheFolder) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("XDG_CACHE_HOME", "/tmp/cache", 1);
  EXPECT_EQ(DefaultTuneJournalPath("/models/Qwen3.gguf", 32768, "256:64", "-sim-1a2b"),
            "/tmp/cache/moetune/tune/Qwen3-32768-256-64-sim-1a2b.journal");
  if (old != nullptr) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
}

const Decision* PhaseDecision(const TuneResult& r, TunePhase phase) {
  for (const Decision& d : r.decisions) {
    if (d.phase == phase) return &d;
  }
  return nullptr;
}

// Which layers' experts stay on the CPU: the first N (--n-cpu-moe) or the
// last N (llama.cpp's fit order). Where the last are faster (one fork
// measured about 10% more prefill), tune keeps them and writes them as an -ot
// rule; where the two tie, --n-cpu-moe stays.
TEST_F(TuneJobTest, KeepsTheFasterEndOfTheLayersForTheExpertsOnTheCpu) {
  q.ctx = 8192;
  q.budget_seconds = 3600;
  SimEngine even(so);
  auto tie = RunTuneJob(q, sim.machine, even);
  ASSERT_TRUE(tie.ok()) << tie.error().message();
  const TuneResult& t = tie->report.result;
  const Decision* d = PhaseDecision(t, TunePhase::kExpertOrder);
  ASSERT_NE(d, nullptr) << "N=" << t.best.placement.n_cpu_moe;
  EXPECT_NE(d->rule.find("tie"), std::string::npos) << d->rule << " / " << d->evidence;
  EXPECT_EQ(t.best.placement.cpu_experts, CpuExpertsFrom::kFirst);

  SimEngineOptions last_faster = so;
  // Every run with the first layers' experts on the CPU 25% slower.
  last_faster.throttle = [](std::size_t, const RunConfig& c) {
    return c.placement.n_cpu_moe > 0 && c.placement.cpu_experts == CpuExpertsFrom::kFirst ? 1.25
                                                                                          : 1.0;
  };
  SimEngine engine(last_faster);
  auto faster = RunTuneJob(q, sim.machine, engine);
  ASSERT_TRUE(faster.ok()) << faster.error().message();
  const TuneResult& r = faster->report.result;
  d = PhaseDecision(r, TunePhase::kExpertOrder);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->rule, "fastest beyond the noise") << d->evidence;
  EXPECT_EQ(r.best.placement.cpu_experts, CpuExpertsFrom::kLast);
  EXPECT_GT(r.best.placement.n_cpu_moe, 0);
  // The command carries the last layers as an -ot rule, without --n-cpu-moe.
  const std::vector<std::string> argv = ServerArgv(r.best);
  const auto flag = [&](const std::string& f) {
    const auto it = std::find(argv.begin(), argv.end(), f);
    return it != argv.end() && it + 1 != argv.end() ? *(it + 1) : std::string("(none)");
  };
  EXPECT_EQ(flag("--n-cpu-moe"), "(none)") << ::testing::PrintToString(argv);
  const int n_layer = static_cast<int>(model.weights.layers.size());
  EXPECT_NE(flag("-ot").find(fmt::format("blk\\.({}|", n_layer - r.best.placement.n_cpu_moe)),
            std::string::npos)
      << ::testing::PrintToString(argv);
}

// Two devices: llama.cpp's order (-dev) against the other, each with its own
// split; the other is kept only when it is faster beyond the noise.
TEST_F(TuneJobTest, KeepsTheFasterOrderOfTwoDevices) {
  MachineSpec two = DefaultMachineSpec();
  ASSERT_TRUE(ApplyMachinePresets("rtx4070-12g,rtx3060-12g,ddr4-3200-2ch,8c16t", &two).ok());
  TuneMachine machine = TuneMachineFromSpec(two, CalibrationConstants{});
  machine.simulated = true;
  machine.identity = sim.machine.identity;
  ASSERT_EQ(machine.devices.size(), 2u);
  q.ctx = 4096;
  q.budget_seconds = 3600;
  q.threads = {8};
  // Every run whose -dev starts with `slow` is 30% slower.
  auto tune_with_slow_first = [&](const std::string& slow) {
    SimEngineOptions o = so;
    o.machine = two;
    o.throttle = [slow](std::size_t, const RunConfig& c) {
      return !c.placement.devices.empty() && c.placement.devices.front().device == slow ? 1.3 : 1.0;
    };
    SimEngine engine(o);
    auto r = RunTuneJob(q, machine, engine);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? r->report.result : TuneResult{};
  };
  const TuneResult swapped = tune_with_slow_first("CUDA0");
  const Decision* d = PhaseDecision(swapped, TunePhase::kDeviceOrder);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->rule, "fastest beyond the noise") << d->evidence;
  EXPECT_EQ(d->choice.rfind("-dev CUDA1,CUDA0 -ts ", 0), 0u) << d->choice;
  const std::vector<std::string> argv = ServerArgv(swapped.best);
  const auto dev = std::find(argv.begin(), argv.end(), "-dev");
  ASSERT_NE(dev, argv.end());
  EXPECT_EQ(*(dev + 1), "CUDA1,CUDA0") << ::testing::PrintToString(argv);
  // The changed order holds at the target context: the final check says so.
  const Decision* check = PhaseDecision(swapped, TunePhase::kFinalCheck);
  ASSERT_NE(check, nullptr);
  EXPECT_NE(check->choice.find("-dev CUDA1,CUDA0"), std::string::npos) << check->choice;

  const TuneResult kept = tune_with_slow_first("CUDA1");
  d = PhaseDecision(kept, TunePhase::kDeviceOrder);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->choice.rfind("-dev CUDA0,CUDA1 -ts ", 0), 0u) << d->choice;
  EXPECT_EQ(kept.best.placement.devices.front().device, "CUDA0");
}

// A quiet machine, or a warning (issue 17 item 5), on the simulated engine's
// injected background load: the noisy-machine scenario.
bool HasNote(const TuneResult& r, const std::string& part) {
  for (const auto& n : r.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

// Results taken while other processes kept the CPU busy are measured again:
// the busy ones leave the pools, and the pick is the quiet machine's.
TEST_F(TuneJobTest, BusyResultsAreMeasuredAgainAndThePickIsTheQuietOne) {
  q.ctx = 8192;
  q.budget_seconds = 3600;
  SimEngine quiet(so);
  auto calm = RunTuneJob(q, sim.machine, quiet);
  ASSERT_TRUE(calm.ok()) << calm.error().message();

  SimEngineOptions noisy = so;
  // A burst on 6 of the 16 threads during one result (the 11th).
  noisy.background_cores = [](std::size_t k) { return k == 10 ? 6.0 : 0.0; };
  SimEngine engine(noisy);
  auto busy = RunTuneJob(q, sim.machine, engine);
  ASSERT_TRUE(busy.ok()) << busy.error().message();
  const TuneResult& r = busy->report.result;
  EXPECT_TRUE(HasNote(r, "measured again once")) << ::testing::PrintToString(r.notes);
  // The same placement (the noise of the runs after it differs, so a setting
  // within the noise may not), and no busy figure left among the results read.
  EXPECT_NEAR(r.best.placement.n_cpu_moe, calm->report.result.best.placement.n_cpu_moe, 1);
  for (const auto& m : r.measurements) {
    EXPECT_LE(m.other_cpu_cores.value_or(0), 0.25) << Journal::Key(m.config);
  }
}

// Drift nothing on the machine shows (thermal throttling) is caught by the
// anchor: a lasting one is said, a passing one is measured again.
TEST_F(TuneJobTest, TheAnchorCatchesDrift) {
  q.ctx = 8192;
  q.budget_seconds = 3600;
  SimEngineOptions lasting = so;
  lasting.throttle = [](std::size_t k, const RunConfig&) { return k >= 40 ? 1.4 : 1.0; };
  SimEngine hot(lasting);
  auto a = RunTuneJob(q, sim.machine, hot);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_TRUE(HasNote(a->report.result, "did not recover"))
      << ::testing::PrintToString(a->report.result.notes);

  SimEngineOptions passing = so;
  // Slow from result 40 until the anchor has run slow once, then full speed
  // again (a program that ended just as the anchor was checked).
  auto over = std::make_shared<bool>(false);
  passing.throttle = [over](std::size_t k, const RunConfig& c) {
    if (k < 40 || *over) return 1.0;
    if (c.n_gen > 0 && c.n_gen <= 32) *over = true;  // the anchor's short decode
    return 1.4;
  };
  SimEngine warm(passing);
  auto b = RunTuneJob(q, sim.machine, warm);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_TRUE(HasNote(b->report.result, "then recovered"))
      << ::testing::PrintToString(b->report.result.notes);

  SimEngine quiet(so);
  auto c = RunTuneJob(q, sim.machine, quiet);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(HasNote(c->report.result, "drifted"))
      << ::testing::PrintToString(c->report.result.notes);
}

}  // namespace
}  // namespace moetune
