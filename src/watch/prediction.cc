#include "watch/prediction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "engine/run_config.h"
#include "gguf/ggml_type.h"
#include "speed/speed_model.h"
#include "util/text.h"

namespace moetune {
namespace {

using nlohmann::json;

Error BadFlag(const std::string& flag, const std::string& value, const std::string& why) {
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("the server's {} '{}' {}: no prediction for it", flag, value, why));
}

// Why a shaping flag's value did not parse, as the prediction says it.
std::string WhyInvalid(const FlagSetting& f) {
  switch (f.flag) {
    case FlagId::kCacheTypeK:
    case FlagId::kCacheTypeV:
      return "is a cache type the speed model does not know";
    case FlagId::kFlashAttn:
      return "is not on, off or auto";
    case FlagId::kOverrideTensor:
      return "is not a list of pattern=BUFFER rules";
    default:
      break;
  }
  if (f.value.empty()) return "has no value";
  const auto n = ParseInt64(f.value);
  return n && *n < 0 ? "is negative" : "is not a whole number";
}

std::optional<double> Positive(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v <= 0 || v > 1e9) return std::nullopt;
  return v;
}

// One predicted point of plan --predict, when it loads without spilling.
std::optional<BaselinePoint> PlanPoint(const json& p, int64_t depth) {
  if (!p.is_object() || !p.value("loads", false)) return std::nullopt;
  auto spill = p.find("spill_bytes");
  if (spill != p.end() && spill->is_number() && spill->get<double>() > 0) return std::nullopt;
  BaselinePoint b{depth, Positive(p, "prefill_tps"), Positive(p, "decode_tps")};
  if (!b.prefill_tps && !b.decode_tps) return std::nullopt;
  return b;
}

}  // namespace

Result<RunSettings> RunSettingsFromServer(const ServerSettings& s, const ModelInfo& model) {
  for (const auto& bad : s.invalid) {
    const FlagSpec& f = Flag(bad.flag);
    if (f.shapes) return BadFlag(f.spelling, bad.value, WhyInvalid(bad));
  }
  RunSettings r;
  const ServerConfig& c = s.config;
  const Placement& p = c.placement;
  const int n_layer = static_cast<int>(model.arch.hp.n_layer);
  const bool explicit_placement = p.n_gpu_layers >= 0 || p.n_cpu_moe >= 0 || p.all_cpu_moe ||
                                  !p.OverrideTensor().empty() || s.Given(FlagId::kGpuLayers);
  if (!explicit_placement && c.fit != Switch::kOff) {
    return Error(ErrorKind::kInvalidArgument,
                 "the server's placement is left to --fit (no -ngl, --n-cpu-moe or -ot, and -fit "
                 "not off): llama.cpp chooses it at start, so there is nothing to predict");
  }
  // -ngl: a number, or auto/all (every layer once --fit steps aside).
  r.n_gpu_layers = p.n_gpu_layers >= 999 ? -1 : p.n_gpu_layers;
  r.n_cpu_moe = p.all_cpu_moe ? n_layer : std::max(0, p.n_cpu_moe);
  r.override_tensor = p.OverrideTensor();
  r.threads = std::max(0, c.threads);  // -1: llama.cpp's default, one per core
  r.n_ubatch = c.n_ubatch;
  r.n_batch = c.n_batch;
  r.type_k = c.type_k;
  r.type_v = c.type_v;
  // -fa auto turns flash attention on for the CPU and CUDA backends.
  r.flash_attn = c.flash_attn != FlashAttn::kOff;
  // Pinned as a measurement with the same flags is (engine/perf_bridge.h).
  r.pinned = s.Given(FlagId::kNoMmap) || LoadModeIsPinned(LoadModeName(c.load_mode));
  r.op_offload = !s.Given(FlagId::kNoOpOffload);
  r.n_ctx = c.ctx_size > 0 ? c.ctx_size : static_cast<int64_t>(model.arch.hp.n_ctx_train);
  // -np: -1 (absent) is automatic, which llama-server makes 4 slots sharing
  // one unified cache ("-kvu: enabled if number of slots is auto").
  const ContextParams ctx = ContextOf(c, ReserveOutputs::kPerSequence, r.n_ctx);
  r.n_seq = ctx.n_seq;
  r.kv_unified = ctx.kv_unified;
  return r;
}

std::vector<int> PredictionDepths(int64_t n_ctx) {
  const int c = static_cast<int>(std::clamp<int64_t>(n_ctx, 512, int64_t{1} << 24));
  return {0, c / 8, c / 4, c / 2, c};
}

Result<std::unique_ptr<PredictedBaseline>> PredictServer(const ServerPredictor& p,
                                                         const ServerSettings& settings,
                                                         std::optional<int> n_cpu_moe,
                                                         std::vector<std::string>* notes) {
  if (!p.model) return Error(ErrorKind::kInvalidArgument, "no model for the prediction");
  MOETUNE_ASSIGN_OR_RETURN(RunSettings run, RunSettingsFromServer(settings, *p.model));
  if (n_cpu_moe) run.n_cpu_moe = *n_cpu_moe;
  // The expectation: everything the placement puts on the GPU is in VRAM.
  MachineSpec roomy = p.machine;
  if (roomy.accel()) {
    roomy.accel()->vram_free = std::max<int64_t>(roomy.accel()->vram_free, int64_t{1} << 50);
    roomy.reserve = 0;
  }
  const SpeedModel model(*p.model, roomy, p.constants);
  // A slot's context: -c split over the slots unless they share one cache.
  const int64_t per_slot = run.kv_unified ? run.n_ctx : run.n_ctx / std::max(1, run.n_seq);
  std::vector<BaselinePoint> points;
  for (int depth : PredictionDepths(per_slot)) {
    RunSettings r = run;
    r.n_prompt = r.n_ubatch;  // full micro-batches: what the overflow rule expects
    r.n_gen = 2;
    r.n_depth = depth;
    auto pred = model.Predict(r);
    if (!pred.ok()) return pred.take_error().Context("speed model");
    if (!pred->loads) {
      return Error(ErrorKind::kInvalidArgument,
                   "the speed model cannot run this placement: " + pred->failure);
    }
    points.push_back({depth, pred->prefill.tokens_per_second, pred->decode.tokens_per_second});
  }
  // A spill the model foresees on the real budget (silent spill machines).
  if (p.machine.accel() && notes != nullptr) {
    MachineSpec real = p.machine;
    real.spill = SpillMode::kSilent;
    const SpeedModel on_budget(*p.model, real, p.constants);
    RunSettings r = run;
    r.n_prompt = r.n_ubatch;
    r.n_gen = 2;
    r.n_depth = static_cast<int>(std::max<int64_t>(0, per_slot - r.n_ubatch - r.n_gen));
    auto pred = on_budget.Predict(r);
    if (pred.ok() && pred->spill_bytes > 0) {
      notes->push_back(fmt::format(
          "the speed model expects --n-cpu-moe {} to need {:.0f} MiB more than the GPU's free "
          "memory on {} by depth {}: watch for the overflow alarm",
          run.n_cpu_moe, static_cast<double>(pred->spill_bytes) / 1048576.0, p.machine.label,
          r.n_depth));
    }
  }
  return std::make_unique<PredictedBaseline>(
      points,
      fmt::format("predicted by the speed model for --n-cpu-moe {} on {} ({}); "
                  "expected at least prediction / {:.1f}",
                  run.n_cpu_moe, p.machine.label, p.constants_source, kPredictionTolerance));
}

bool HasPlanPrediction(const json& j) {
  if (!j.is_object()) return false;
  auto opts = j.find("options");
  if (opts == j.end() || !opts->is_array()) return false;
  return std::any_of(opts->begin(), opts->end(), [](const json& o) {
    return o.is_object() && o.contains("predicted") && o["predicted"].is_object();
  });
}

Result<std::unique_ptr<PredictedBaseline>> BaselineFromPlanPrediction(
    const json& plan, std::optional<int> n_cpu_moe, const std::string& source,
    std::vector<std::string>* notes) {
  if (!HasPlanPrediction(plan)) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{} has no predicted speeds (options[].predicted of moetune plan "
                             "--predict --json)",
                             source));
  }
  int64_t target_depth = 0;
  bool calibrated = false;
  if (auto pr = plan.find("prediction"); pr != plan.end() && pr->is_object()) {
    auto t = pr->find("target_depth");
    if (t != pr->end() && t->is_number_integer())
      target_depth = std::clamp<int64_t>(t->get<int64_t>(), 0, int64_t{1} << 24);
    calibrated = pr->value("calibrated", false);
  }
  if (!calibrated) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{} was predicted with the speed model's default constants "
                             "(prediction.calibrated is not true): not trusted as a baseline; run "
                             "`moetune calibrate MODEL`, then plan --predict again",
                             source));
  }
  std::map<int, std::vector<BaselinePoint>> by_n;
  for (const auto& o : plan["options"]) {
    if (!o.is_object()) continue;
    auto n = o.find("n_cpu_moe");
    auto pred = o.find("predicted");
    if (n == o.end() || !n->is_number_integer() || pred == o.end()) continue;
    const int64_t nv = n->get<int64_t>();
    if (nv < 0 || nv > 100000) continue;
    std::vector<BaselinePoint> pts;
    if (auto d0 = PlanPoint(*pred, 0)) pts.push_back(*d0);
    if (auto at = pred->find("at_target"); at != pred->end() && target_depth > 0) {
      if (auto dt = PlanPoint(*at, target_depth)) pts.push_back(*dt);
    }
    if (!pts.empty()) by_n[static_cast<int>(nv)] = std::move(pts);
  }
  if (by_n.empty()) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}: no predicted placement loads without spilling", source));
  }
  int chosen = by_n.begin()->first;
  if (n_cpu_moe) {
    auto it = by_n.lower_bound(*n_cpu_moe);
    chosen = it != by_n.end() ? it->first : by_n.rbegin()->first;
    if (chosen != *n_cpu_moe && notes != nullptr) {
      notes->push_back(
          fmt::format("{} has no usable prediction at --n-cpu-moe {}; the baseline uses N={}",
                      source, *n_cpu_moe, chosen));
    }
  }
  std::string machine = "the plan's machine";
  if (auto pr = plan.find("prediction"); pr != plan.end() && pr->is_object()) {
    auto m = pr->find("machine");
    if (m != pr->end() && m->is_string()) machine = m->get<std::string>();
  }
  return std::make_unique<PredictedBaseline>(
      by_n[chosen], fmt::format("predicted in {} for --n-cpu-moe {} on {}; expected at least "
                                "prediction / {:.1f}",
                                source, chosen, machine, kPredictionTolerance));
}

}  // namespace moetune
