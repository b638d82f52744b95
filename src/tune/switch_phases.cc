#include "tune/switch_phases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <string>
#include <vector>

#include "config/flags.h"

namespace moetune {
namespace {

// "A: prefill X, decode Y t/s best; B: ... t/s tie" for a choice between two settings.
std::string TwoSettingsEvidence(const std::array<const char*, 2>& names,
                                const std::vector<TuneLedger::Scored>& scored,
                                const Choice& choice) {
  std::string out;
  for (size_t i = 0; i < 2; ++i) {
    out += fmt::format("{}{}: prefill {:.1f}, decode {:.1f} t/s{}", i == 0 ? "" : "; ", names[i],
                       scored[i].pp ? scored[i].pp->mean : 0, scored[i].tg ? scored[i].tg->mean : 0,
                       StandingSuffix(choice, i, scored));
  }
  return out;
}

// Whether the q8_0 cache `q`'s prefill collapses at the target context
// against `f16`'s (the collapse rule, tune/rules.h): a layer gained at depth 0
// is worth nothing then. Measures both there; false without depth.
bool KvCacheCollapses(TuneLedger& ledger, const TuneSettings& f16, const TuneSettings& q) {
  const TuneOptions& opt = ledger.options();
  const int deep = DeepestDepth(opt);
  if (deep <= 0) return false;
  ledger.Measure({f16, q}, deep, opt.depth_repetitions, "KV cache type");
  const auto f16_speeds = ledger.PrefillAtDepth(f16, deep), q8 = ledger.PrefillAtDepth(q, deep);
  return f16_speeds && q8 && Collapses(*q8, *f16_speeds, opt.rules.analysis.collapse);
}

}  // namespace

namespace {

// One alternative against the current setting: [0] is kept on a tie.
struct SwitchTrial {
  TunePhase phase;
  const char* what;                      // the ledger's name for the comparison
  std::array<TuneSettings, 2> settings;  // [0]: the default, kept on a tie
  std::array<const char*, 2> names;      // "flash attention on", ...
  std::array<const char*, 2> evidence;   // "on", "off"
  std::array<std::string, 2> choice;     // each one's choice text: "-fa on", ...
  const char* tie;                       // "tie: flash attention stays on (...)"
};

// Measures both, keeps the second only when it is faster beyond the noise,
// and keeps the current setting when the comparison cannot decide.
PhaseOutcome TrySwitch(TuneLedger& ledger, TuneSettings cur, const SwitchTrial& t) {
  const std::vector<TuneSettings> ss(t.settings.begin(), t.settings.end());
  std::vector<TuneLedger::Scored> scored;
  const Choice choice = ledger.MeasureAndChoose(ss, t.what, &scored);
  const size_t chosen = Chosen(choice);
  const std::string& kept = t.choice[cur == t.settings[1] ? 1 : 0];
  if (auto u = UndecidedOf(choice, scored, {t.names[0], t.names[1]}, kept)) {
    return {cur, UndecidedDecision(t.phase, kept, std::move(*u),
                                   TwoSettingsEvidence(t.evidence, scored, choice))};
  }
  cur = ss[chosen];
  return {cur, MakeDecision(t.phase, t.choice[chosen],
                            choice.clear() ? "fastest beyond the noise" : t.tie,
                            TwoSettingsEvidence(t.evidence, scored, choice))};
}

}  // namespace

PhaseOutcome RunFlashAttentionPhase(TuneLedger& ledger, TuneSettings cur) {
  ledger.set_phase(TunePhase::kFlashAttention);
  if (!ledger.space().try_flash_attn) return {cur, std::nullopt};
  // Without flash attention the compute buffer holds the whole score matrix:
  // a pick without it is measured at the target context (RunFinalCheckPhase).
  TuneSettings on = cur, off = cur;
  on.flash_attn = FlashAttn::kOn;
  off.flash_attn = FlashAttn::kOff;
  return TrySwitch(ledger, cur,
                   {TunePhase::kFlashAttention,
                    "flash attention",
                    {on, off},
                    {"flash attention on", "flash attention off"},
                    {"on", "off"},
                    {FlagText(FlagId::kFlashAttn, "on"), FlagText(FlagId::kFlashAttn, "off")},
                    "tie: flash attention stays on (smaller compute buffer)"});
}

PhaseOutcome RunLoadModePhase(TuneLedger& ledger, TuneSettings cur) {
  ledger.set_phase(TunePhase::kLoadMode);
  if (!ledger.space().try_load_mode) return {cur, std::nullopt};
  TuneSettings mapped = cur, loaded = cur;
  mapped.load_mode = LoadMode::kDefault;
  loaded.load_mode = LoadMode::kNone;
  return TrySwitch(
      ledger, cur,
      {TunePhase::kLoadMode,
       "load mode",
       {mapped, loaded},
       {"memory-mapped", "loaded (-lm none)"},
       {"mmap", "loaded"},
       {"memory-mapped (default)", "-lm none (loaded, pinned; --no-mmap in older builds)"},
       "tie: the default stays"});
}

PhaseOutcome RunExpertOrderPhase(TuneLedger& ledger, TuneSettings cur) {
  constexpr TunePhase kPhase = TunePhase::kExpertOrder;
  ledger.set_phase(kPhase);
  const TuneSpace& space = ledger.space();
  // Only where the order can matter: a GPU, routed experts, one device (across
  // devices each keeps its own first layers'), and some but not all on the CPU.
  if (!space.placement_matters || !space.moe || !space.device_splits.empty() || cur.n <= 0 ||
      cur.n >= space.n_layer) {
    return {cur, std::nullopt};
  }
  TuneSettings first = cur, last = cur;
  first.cpu_experts = CpuExpertsFrom::kFirst;
  last.cpu_experts = CpuExpertsFrom::kLast;
  const std::string first_text = FlagText(FlagId::kNCpuMoe, cur.n) + " (the first layers' experts)";
  const std::string last_text =
      fmt::format("the last {} layers' experts on the CPU (-ot, llama.cpp's fit order)", cur.n);
  if (space.memory_of) {
    // The same N from the other end holds other layers' experts (a model
    // with dense first layers keeps more on the GPU): measured only when it
    // fits, or puts no more on the GPU than the placement measured already
    // (which the long-context phase may have proven beyond the plan's margin).
    auto memory = [&](const TuneSettings& s) {
      ServerConfig c = SettingsConfig(space, s);
      c.ctx_size = ledger.options().ctx;
      c.n_parallel = 1;
      return space.memory_of(c);
    };
    const auto m = memory(last), now = memory(first);
    if (!m || (!m->fits && (!now || m->gpu.total() > now->gpu.total()))) {
      return {cur, MakeDecision(kPhase,
                                cur.cpu_experts == CpuExpertsFrom::kLast ? last_text : first_text,
                                "not tried",
                                fmt::format("the last {} layers' experts on the CPU leave the GPU "
                                            "without its margin at the target context, and hold "
                                            "more there than the first {} layers' do",
                                            cur.n, cur.n))};
    }
  }
  return TrySwitch(ledger, cur,
                   {kPhase,
                    "expert order",
                    {first, last},
                    {"first layers' experts on the CPU", "last layers' experts on the CPU"},
                    {"first", "last"},
                    {first_text, last_text},
                    "tie: the first layers' experts stay on the CPU (--n-cpu-moe, the shorter "
                    "command)"});
}

PhaseOutcome RunDeviceOrderPhase(TuneLedger& ledger, TuneSettings cur) {
  constexpr TunePhase kPhase = TunePhase::kDeviceOrder;
  ledger.set_phase(kPhase);
  const TuneSpace& space = ledger.space();
  if (!space.placement_matters || space.other_orders.empty()) return {cur, std::nullopt};
  // The memory map of an order at the target context with one slot.
  auto memory = [&](const TuneSettings& s) -> std::optional<PlacementOption> {
    if (!space.memory_of) return std::nullopt;
    ServerConfig c = SettingsConfig(space, s);
    c.ctx_size = ledger.options().ctx;
    c.n_parallel = 1;
    return space.memory_of(c);
  };
  const auto now = memory(cur);
  std::vector<TuneSettings> ss = {cur};
  std::vector<std::string> skipped;
  for (size_t k = 0; k <= space.other_orders.size(); ++k) {
    TuneSettings s = cur;
    s.device_order = static_cast<int>(k);
    if (s == cur) continue;
    // Measured when it fits, or leaves the tightest device no less room than
    // the current order (which the long-context phase may have proven beyond
    // the plan's margin).
    const auto m = memory(s);
    const bool room = !space.memory_of || (m && (m->fits || (now && m->headroom >= now->headroom)));
    if (room) {
      ss.push_back(s);
    } else {
      skipped.push_back(DeviceOrderText(space, s));
    }
  }
  const std::string kept = DeviceOrderText(space, cur);
  const std::string not_tried = skipped.empty()
                                    ? ""
                                    : fmt::format(
                                          "; not tried (a device without its margin at the target "
                                          "context, and less room than now): {}",
                                          fmt::join(skipped, "; "));
  if (ss.size() < 2) return {cur, MakeDecision(kPhase, kept, "not tried", not_tried.substr(2))};
  std::vector<TuneLedger::Scored> scored;
  const Choice choice = ledger.MeasureAndChoose(ss, "device order", &scored);
  std::vector<std::string> names;
  std::string evidence;
  for (size_t i = 0; i < ss.size(); ++i) {
    names.push_back(DeviceOrderText(space, ss[i]));
    evidence +=
        fmt::format("{}{}: prefill {:.1f}, decode {:.1f} t/s{}", i ? "; " : "", names[i],
                    scored[i].pp ? scored[i].pp->mean : 0, scored[i].tg ? scored[i].tg->mean : 0,
                    StandingSuffix(choice, i, scored));
  }
  evidence += not_tried;
  if (auto u = UndecidedOf(choice, scored, names, kept))
    return {cur, UndecidedDecision(kPhase, kept, std::move(*u), evidence)};
  const size_t chosen = Chosen(choice);
  cur = ss[chosen];
  return {cur, MakeDecision(kPhase, names[chosen],
                            choice.clear() ? "fastest beyond the noise"
                            : chosen == 0  ? "tie: the current order stays"
                                           : "faster beyond the noise than the current order; "
                                             "of the orders tied with it, the first is kept",
                            evidence)};
}

PhaseOutcome RunKvCachePhase(TuneLedger& ledger, TuneSettings cur, bool placement_tuned) {
  constexpr TunePhase kPhase = TunePhase::kKvCacheType;
  ledger.set_phase(kPhase);
  if (!ledger.space().try_kv_quant || !placement_tuned || cur.n == 0) return {cur, std::nullopt};
  // Only when a q8_0 cache buys a layer of experts on the GPU.
  const int n = cur.n - 1;
  if (!ledger.space().fits || !ledger.Fits(n, cur.ubatch, ggml_type::kQ8_0) ||
      ledger.Fits(n, cur.ubatch, cur.kv_type)) {
    const std::string kv = GgmlTypeName(cur.kv_type);
    return {cur, MakeDecision(kPhase, "-ctk " + kv + " -ctv " + kv, "not tried",
                              "a q8_0 KV cache does not free enough memory for another layer "
                              "of experts on the GPU")};
  }
  const std::string kv = GgmlTypeName(cur.kv_type);
  TuneSettings q = cur;
  q.n = n;
  q.kv_type = ggml_type::kQ8_0;
  q.flash_attn = FlashAttn::kOn;  // a quantized V cache needs flash attention
  std::vector<TuneLedger::Scored> scored;
  const Choice choice = ledger.MeasureAndChoose({cur, q}, "KV cache type", &scored);
  const bool collapses = KvCacheCollapses(ledger, cur, q);
  const bool take = choice.standings[1] == Standing::kBest &&
                    choice.standings[0] == Standing::kWorse && !collapses;
  const std::string evidence =
      fmt::format("f16 at N={}: {:.4f} requests/s; q8_0 at N={}: {:.4f} requests/s", n + 1,
                  scored[0].objective ? scored[0].objective->mean : 0, n,
                  scored[1].objective ? scored[1].objective->mean : 0);
  if (auto u = UndecidedOf(choice, scored,
                           {fmt::format("f16 at N={}", n + 1), fmt::format("q8_0 at N={}", n)},
                           "-ctk " + kv + " -ctv " + kv)) {
    return {cur, UndecidedDecision(kPhase, "-ctk " + kv + " -ctv " + kv, std::move(*u), evidence)};
  }
  if (take) cur = q;
  return {cur, MakeDecision(
                   kPhase,
                   take ? fmt::format("-ctk q8_0 -ctv q8_0 with {}", FlagText(FlagId::kNCpuMoe, n))
                        : "-ctk f16 -ctv f16",
                   take ? "a q8_0 cache buys a layer and is faster beyond the noise"
                        : (collapses ? "rejected: prefill collapses with depth"
                                     : "not faster beyond the noise"),
                   evidence)};
}

}  // namespace moetune
