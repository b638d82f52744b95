#include "watch/prediction.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "engine/run_config.h"
#include "gguf/ggml_type.h"
#include "speed/speed_model.h"

namespace moetune {
namespace {

using nlohmann::json;

Error BadFlag(const std::string& flag, const std::string& value, const std::string& why) {
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("the server's {} '{}' {}: no prediction for it", flag, value, why));
}

// A whole number, or an error naming the flag.
Result<int> IntFlag(const ServerSettings& s, const std::string& key, const std::string& flag,
                    int fallback) {
  const auto v = s.Get(key);
  if (!v) return fallback;
  int n = 0;
  const auto r = std::from_chars(v->data(), v->data() + v->size(), n);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size())
    return BadFlag(flag, *v, "is not a whole number");
  return n;
}

Result<uint32_t> CacheType(const ServerSettings& s, const std::string& key,
                           const std::string& flag) {
  const auto v = s.Get(key);
  if (!v || v->empty()) return ggml_type::kF16;
  auto t = GgmlTypeByName(*v);
  if (!t) return BadFlag(flag, *v, "is a cache type the speed model does not know");
  return t->id;
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
  RunSettings r;
  const int n_layer = static_cast<int>(model.arch.hp.n_layer);
  const auto fit = s.Get("fit");
  const bool explicit_placement =
      s.Get("n_gpu_layers") || s.Get("n_cpu_moe") || s.Get("cpu_moe") || s.Get("override_tensor");
  if (!explicit_placement && fit != "off") {
    return Error(ErrorKind::kInvalidArgument,
                 "the server's placement is left to --fit (no -ngl, --n-cpu-moe or -ot, and -fit "
                 "not off): llama.cpp chooses it at start, so there is nothing to predict");
  }
  // -ngl: a number, or auto/all (every layer once --fit steps aside).
  const auto ngl = s.Get("n_gpu_layers");
  if (!ngl || *ngl == "auto" || *ngl == "all") {
    r.n_gpu_layers = -1;
  } else {
    MOETUNE_ASSIGN_OR_RETURN(r.n_gpu_layers, IntFlag(s, "n_gpu_layers", "-ngl", -1));
  }
  if (s.all_cpu_moe()) {
    r.n_cpu_moe = n_layer;
  } else {
    MOETUNE_ASSIGN_OR_RETURN(r.n_cpu_moe, IntFlag(s, "n_cpu_moe", "--n-cpu-moe", 0));
    if (r.n_cpu_moe < 0) return BadFlag("--n-cpu-moe", std::to_string(r.n_cpu_moe), "is negative");
  }
  r.override_tensor = s.Get("override_tensor").value_or("");
  MOETUNE_ASSIGN_OR_RETURN(r.threads, IntFlag(s, "threads", "-t", 0));
  r.threads = std::max(0, r.threads);  // -1: llama.cpp's default, one per core
  r.n_ubatch = s.NUbatch();
  MOETUNE_ASSIGN_OR_RETURN(r.n_batch, IntFlag(s, "n_batch", "-b", 2048));
  if (r.n_batch <= 0) r.n_batch = 2048;
  MOETUNE_ASSIGN_OR_RETURN(r.type_k, CacheType(s, "type_k", "-ctk"));
  MOETUNE_ASSIGN_OR_RETURN(r.type_v, CacheType(s, "type_v", "-ctv"));
  // -fa auto turns flash attention on for the CPU and CUDA backends.
  const std::string fa = FlashAttnOrAsIs(s.Get("flash_attn").value_or(""));
  r.flash_attn = fa != "off";
  r.pinned = s.Get("no_mmap").has_value() || LoadModeIsPinned(s.Get("load_mode").value_or(""));
  r.op_offload = !s.Get("no_op_offload").has_value();
  int ctx = 0;
  MOETUNE_ASSIGN_OR_RETURN(ctx, IntFlag(s, "ctx_size", "-c", 0));
  r.n_ctx = ctx > 0 ? ctx : static_cast<int64_t>(model.arch.hp.n_ctx_train);
  // -np: -1 (absent) is automatic, which llama-server makes 4 slots sharing
  // one unified cache ("-kvu: enabled if number of slots is auto").
  int np = 0;
  MOETUNE_ASSIGN_OR_RETURN(np, IntFlag(s, "n_parallel", "-np", -1));
  r.n_seq = np > 0 ? np : 4;
  r.kv_unified = np <= 0 || s.Get("kv_unified").has_value();
  if (s.Get("no_kv_unified")) r.kv_unified = false;
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
  if (roomy.accel) {
    roomy.accel->vram_free = std::max<int64_t>(roomy.accel->vram_free, int64_t{1} << 50);
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
  if (p.machine.accel && notes != nullptr) {
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
