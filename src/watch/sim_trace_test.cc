// The overflow rule on conversations served by the simulated engine in
// silent-spill mode (sim_trace_test_util.h), for three real model shapes on a
// 12 GB card: the alarm must fire on every trace whose placement spills and on
// no trace whose placement fits, whatever the reference (the session's own
// first requests, the curves tune would have measured, the speed model's
// prediction), whether the requests arrive as a log gives them, as live
// sampling sees them, or as llama-server's log text read back.
//
// Each test prints one line per trace (what spilled, what fired): the figures
// docs/watch.md quotes. The seeds are fixed; `--gtest_random_seed=N` shifts
// them all by N to try other noise (docs/watch.md reports such a sweep).
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "watch/log_reader.h"
#include "watch/replay.h"
#include "watch/sim_trace_test_util.h"

namespace moetune {
namespace {

using testing::AgentTurns;
using testing::ChatTurns;
using testing::MakeScenario;
using testing::SimConversation;
using testing::SimConverse;
using testing::SimMeasured;
using testing::SimPredicted;
using testing::SimScenario;
using testing::SimServer;
using testing::Turn;

constexpr const char* kMachine = "rtx4070-12g,ddr5-6000-2ch,8c16t";
constexpr const char* kPresets[] = {"qwen3moe", "gpt-oss-20b", "qwen35moe"};

uint64_t SeedShift() { return static_cast<uint64_t>(GTEST_FLAG_GET(random_seed)); }

// The scenario spilling from `onset` tokens of context (0: from the first
// request, the other program was there first).
const SimScenario& Scenario(const std::string& preset, int onset) {
  static std::map<std::pair<std::string, int>, SimScenario> cache;
  const auto key = std::pair{preset, onset};
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, MakeScenario(preset, kMachine, onset)).first;
  return it->second;
}

enum class Ref { kSession, kMeasured, kPredicted };
const char* RefName(Ref r) {
  return r == Ref::kSession ? "session" : r == Ref::kMeasured ? "measured" : "predicted";
}

// The reference for a server: measured and predicted for the placement as
// tuned (nothing else on the GPU). Kept per server and kind.
std::shared_ptr<const Baseline> Reference(Ref ref, const SimServer& tuned) {
  static std::map<std::tuple<std::string, int, int64_t, int>, std::shared_ptr<const Baseline>>
      cache;
  if (ref == Ref::kSession) return nullptr;
  const auto key =
      std::tuple{tuned.model, tuned.n_cpu_moe, tuned.machine.reserve, static_cast<int>(ref)};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto b =
      ref == Ref::kMeasured ? SimMeasured(tuned, {0, 8192, 16384, 22528}, 99) : SimPredicted(tuned);
  cache[key] = b;
  return b;
}

struct Outcome {
  std::vector<std::string> per_request, live, log;
  std::string trail;                // the per-request judgements, for failure messages
  std::optional<int> fix_to;        // the proposed --n-cpu-moe
  std::optional<double> raised_at;  // time of the request that raised the alarm
};

// The same conversation judged the three ways watch meets requests.
Outcome Judge(const SimConversation& c, const SimServer& server,
              std::shared_ptr<const Baseline> reference) {
  SessionOptions o;
  o.baseline = std::move(reference);
  o.expected = SettingsFromArgv(server.Argv());
  Outcome out;
  const Replay per_request = ReplayObservations(c.conversation.PerRequest(), o);
  out.per_request = per_request.verdict.Ids();
  for (const auto& e : per_request.entries) {
    const auto& pf = e.observation.prefill;
    out.trail += fmt::format(
        "\n  depth {:>6.0f} {:>5.0f} tokens at {:>6.1f} t/s (expected {:>6.1f}) {:<10} {:<9} {}",
        e.check.depth.value_or(-1), pf ? pf->tokens : 0.0, pf ? pf->rate() : 0.0,
        e.check.expected_prefill_tps.value_or(0), JudgementName(e.check.judgement),
        e.check.baseline_kind, e.check.reason);
  }
  out.live = ReplayObservations(c.conversation.Live(), o).verdict.Ids();
  const ServerLog log = ParseServerLog(c.conversation.Log(server.model, server.n_ctx));
  out.log = ReplayLog(log, o).verdict.Ids();
  if (!per_request.verdict.raised.empty()) {
    const Alarm& a = per_request.verdict.raised.front();
    out.fix_to = a.n_cpu_moe_to;
    out.raised_at = a.since_s;
  }
  return out;
}

bool Overflow(const std::vector<std::string>& ids) {
  return ids == std::vector<std::string>{"overflow"};
}

std::string Row(const std::string& preset, const std::string& trace, Ref ref,
                const SimConversation& c, const Outcome& o) {
  const int first = c.FirstSpilled();
  return fmt::format(
      "{:<12} {:<30} {:<9} spills from request {:>2}  fired (per request, live, "
      "log): {} {} {}",
      preset, trace, RefName(ref), first < 0 ? "-" : std::to_string(first),
      Overflow(o.per_request) ? "yes" : "no", Overflow(o.live) ? "yes" : "no",
      Overflow(o.log) ? "yes" : "no");
}

// Prompts of at least one micro-batch before the first spilled request: the
// session's own reference needs five of them (docs/watch.md, limits).
int FullPromptsBeforeTheSpill(const SimConversation& c, int n_ubatch) {
  int n = 0;
  for (int i = 0; i < c.FirstSpilled(); ++i)
    n += c.conversation.requests[static_cast<std::size_t>(i)].turn.prompt >= n_ubatch;
  return n;
}

struct Variant {
  std::string name;
  int onset = 7000;  // tokens of context from which the in-use machine spills
  std::vector<Turn> turns;
  uint64_t seed = 1;
  double noise = 0;  // extra log-normal spread per request
};

std::vector<Variant> Variants() {
  const uint64_t k = SeedShift();
  std::vector<Variant> v;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    v.push_back({fmt::format("chat, seed {}", seed + k), 7000, ChatTurns(18, 1000, 120), seed + k});
    v.push_back({fmt::format("chat, 15% noise, seed {}", seed + 10 + k), 7000,
                 ChatTurns(18, 1000, 120), seed + 10 + k, 0.15});
  }
  // An agent: prompts of 200 to 1,400 tokens, a third of them shorter than a
  // micro-batch; the spill starts later so that the session's reference has
  // its five full prompts first.
  v.push_back({fmt::format("agent, 10% noise, seed {}", 21 + k), 10000,
               AgentTurns(20, static_cast<unsigned>(5 + k)), 21 + k, 0.10});
  // Short: four spilled requests after six healthy ones (three bad ones are
  // the minimum evidence; one more leaves room for a disturbed request).
  v.push_back(
      {fmt::format("short (10 turns), seed {}", 31 + k), 7000, ChatTurns(10, 1000, 120), 31 + k});
  return v;
}

constexpr Ref kAllRefs[] = {Ref::kSession, Ref::kMeasured, Ref::kPredicted};

TEST(SimTraceTest, EveryOverflowTraceFires) {
  for (const char* preset : kPresets) {
    for (const Variant& v : Variants()) {
      const SimScenario& s = Scenario(preset, v.onset);
      SCOPED_TRACE(fmt::format("{} {}: --n-cpu-moe {}, {:.0f} MiB held by another program", preset,
                               v.name, s.in_use.n_cpu_moe,
                               static_cast<double>(s.in_use.machine.reserve) / 1048576.0));
      const SimConversation c = SimConverse(s.in_use, v.turns, v.seed, v.noise);
      ASSERT_GE(c.FirstSpilled(), 0) << "the trace must spill";
      ASSERT_GE(FullPromptsBeforeTheSpill(c, s.in_use.n_ubatch), 5) << "and fit at first";
      ASSERT_LE(c.FirstSpilled() + 4, static_cast<int>(v.turns.size())) << "for four requests";
      const double spill_t = c.conversation.requests[static_cast<std::size_t>(c.FirstSpilled())].t;
      for (Ref ref : kAllRefs) {
        const Outcome o = Judge(c, s.in_use, Reference(ref, s.tuned));
        std::printf("%s\n", Row(preset, v.name, ref, c, o).c_str());
        EXPECT_TRUE(Overflow(o.per_request)) << RefName(ref) << o.trail;
        EXPECT_TRUE(Overflow(o.live)) << RefName(ref);
        EXPECT_TRUE(Overflow(o.log)) << RefName(ref);
        // Raised by spilled requests, with one or two more layers on the CPU.
        if (!o.raised_at || !o.fix_to) continue;
        EXPECT_GE(*o.raised_at, spill_t) << RefName(ref) << o.trail;
        EXPECT_GE(*o.fix_to, s.in_use.n_cpu_moe + 1);
        EXPECT_LE(*o.fix_to, s.in_use.n_cpu_moe + 2);
      }
    }
  }
}

TEST(SimTraceTest, OverflowFromTheFirstRequestFiresAgainstAnExpectation) {
  // Only a measured or predicted reference can see it: the session's own
  // requests are all slow (docs/watch.md, limits).
  const uint64_t k = SeedShift();
  for (const char* preset : kPresets) {
    const SimScenario& s = Scenario(preset, 0);
    for (const auto& [name, turns, noise] :
         {std::tuple{"from the start, 4 turns", ChatTurns(4, 1000, 100), 0.0},
          std::tuple{"from the start, 12 turns, 15% noise", ChatTurns(12, 1000, 100), 0.15}}) {
      const SimConversation c = SimConverse(s.in_use, turns, 41 + k, noise);
      ASSERT_EQ(c.FirstSpilled(), 0) << preset;
      for (Ref ref : {Ref::kMeasured, Ref::kPredicted}) {
        const Outcome o = Judge(c, s.in_use, Reference(ref, s.tuned));
        std::printf("%s\n", Row(preset, name, ref, c, o).c_str());
        EXPECT_TRUE(Overflow(o.per_request))
            << preset << " " << name << " " << RefName(ref) << o.trail;
        EXPECT_TRUE(Overflow(o.live)) << preset << " " << name << " " << RefName(ref);
        EXPECT_TRUE(Overflow(o.log)) << preset << " " << name << " " << RefName(ref);
      }
    }
  }
}

TEST(SimTraceTest, NoHealthyTraceFires) {
  // The tuned placement with the GPU to itself, and the placement that holds
  // the whole conversation next to the other program: the same conversations.
  for (const char* preset : kPresets) {
    for (const Variant& v : Variants()) {
      const SimScenario& s = Scenario(preset, v.onset);
      for (const SimServer* server : {&s.tuned, &s.fixed}) {
        const std::string which = server == &s.tuned ? "tuned, " : "fixed, ";
        const SimConversation c = SimConverse(*server, v.turns, v.seed, v.noise);
        ASSERT_EQ(c.FirstSpilled(), -1) << preset << " " << which << v.name;
        for (Ref ref : kAllRefs) {
          const Outcome o = Judge(c, *server, Reference(ref, *server));
          std::printf("%s\n", Row(preset, which + v.name, ref, c, o).c_str());
          EXPECT_TRUE(o.per_request.empty())
              << preset << " " << which << v.name << " " << RefName(ref) << o.trail;
          EXPECT_TRUE(o.live.empty()) << preset << " " << which << v.name << " " << RefName(ref);
          EXPECT_TRUE(o.log.empty()) << preset << " " << which << v.name << " " << RefName(ref);
        }
      }
    }
  }
}

TEST(SimTraceTest, TheProposedFixSpillsLaterOrNever) {
  // The alarm's --n-cpu-moe, served the same conversation next to the same
  // program: fewer GPU bytes, so the spill starts deeper or not at all.
  for (const char* preset : kPresets) {
    const SimScenario& s = Scenario(preset, 7000);
    const auto turns = ChatTurns(18, 1000, 120);
    const SimConversation c = SimConverse(s.in_use, turns, 1);
    const Outcome o = Judge(c, s.in_use, nullptr);
    ASSERT_TRUE(o.fix_to) << preset;
    SimServer fixed = s.in_use;
    fixed.n_cpu_moe = *o.fix_to;
    const SimConversation after = SimConverse(fixed, turns, 1);
    std::printf("%-12s --n-cpu-moe %d spills from request %d; the fix, %d: %s\n", preset,
                s.in_use.n_cpu_moe, c.FirstSpilled(), fixed.n_cpu_moe,
                after.FirstSpilled() < 0
                    ? "never"
                    : fmt::format("from request {}", after.FirstSpilled()).c_str());
    EXPECT_TRUE(after.FirstSpilled() == -1 || after.FirstSpilled() > c.FirstSpilled()) << preset;
  }
}

}  // namespace
}  // namespace moetune
