#include "tune/switch_phases.h"

#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

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

PhaseOutcome RunFlashAttentionPhase(TuneLedger& ledger, TuneSettings cur) {
  ledger.set_phase(TunePhase::kFlashAttention);
  if (!ledger.space().try_flash_attn) return {cur, std::nullopt};
  std::vector<TuneSettings> ss;
  for (FlashAttn fa : {FlashAttn::kOn, FlashAttn::kOff}) {
    TuneSettings s = cur;
    s.flash_attn = fa;
    // Without flash attention the compute buffer holds the whole score matrix:
    // a pick without it is measured at the target context (RunFinalCheckPhase).
    ss.push_back(s);
  }
  std::vector<TuneLedger::Scored> scored;
  const Choice choice = ledger.MeasureAndChoose(ss, "flash attention", &scored);
  const size_t chosen = Chosen(choice);
  if (auto u = UndecidedOf(choice, scored, {"flash attention on", "flash attention off"},
                           std::string("-fa ") + FlashAttnName(cur.flash_attn))) {
    return {cur,
            UndecidedDecision(TunePhase::kFlashAttention,
                              std::string("-fa ") + FlashAttnName(cur.flash_attn), std::move(*u),
                              TwoSettingsEvidence({"on", "off"}, scored, choice))};
  }
  cur.flash_attn = ss[chosen].flash_attn;
  return {cur, MakeDecision(TunePhase::kFlashAttention,
                            std::string("-fa ") + FlashAttnName(cur.flash_attn),
                            choice.standings[chosen] == Standing::kBest
                                ? "fastest beyond the noise"
                                : "tie: flash attention stays on (smaller compute buffer)",
                            TwoSettingsEvidence({"on", "off"}, scored, choice))};
}

PhaseOutcome RunLoadModePhase(TuneLedger& ledger, TuneSettings cur) {
  ledger.set_phase(TunePhase::kLoadMode);
  if (!ledger.space().try_load_mode) return {cur, std::nullopt};
  std::vector<TuneSettings> ss;
  for (LoadMode lm : {LoadMode::kDefault, LoadMode::kNone}) {
    TuneSettings s = cur;
    s.load_mode = lm;
    ss.push_back(s);
  }
  std::vector<TuneLedger::Scored> scored;
  const Choice choice = ledger.MeasureAndChoose(ss, "load mode", &scored);
  const size_t chosen = Chosen(choice);
  if (auto u = UndecidedOf(choice, scored, {"memory-mapped", "loaded (-lm none)"},
                           "memory-mapped (default)")) {
    return {cur, UndecidedDecision(TunePhase::kLoadMode, "memory-mapped (default)", std::move(*u),
                                   TwoSettingsEvidence({"mmap", "loaded"}, scored, choice))};
  }
  cur.load_mode = ss[chosen].load_mode;
  return {cur, MakeDecision(TunePhase::kLoadMode,
                            cur.load_mode == LoadMode::kDefault
                                ? "memory-mapped (default)"
                                : "-lm none (loaded, pinned; --no-mmap in older builds)",
                            choice.standings[chosen] == Standing::kBest ? "fastest beyond the noise"
                                                                        : "tie: the default stays",
                            TwoSettingsEvidence({"mmap", "loaded"}, scored, choice))};
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
  return {cur, MakeDecision(kPhase,
                            take ? fmt::format("-ctk q8_0 -ctv q8_0 with --n-cpu-moe {}", n)
                                 : "-ctk f16 -ctv f16",
                            take ? "a q8_0 cache buys a layer and is faster beyond the noise"
                                 : (collapses ? "rejected: prefill collapses with depth"
                                              : "not faster beyond the noise"),
                            evidence)};
}

}  // namespace moetune
