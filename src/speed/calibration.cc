#include "speed/calibration.h"

#include <fmt/format.h>

#include <cmath>

#include "util/json_fields.h"

namespace moetune {

using nlohmann::json;

std::vector<std::pair<std::string, double*>> CalibrationConstants::Fields() {
  return {{"cpu_bw_efficiency", &cpu_bw_efficiency},
          {"cpu_matmul_efficiency", &cpu_matmul_efficiency},
          {"cpu_matvec_efficiency", &cpu_matvec_efficiency},
          {"cpu_attn_prefill_efficiency", &cpu_attn_prefill_efficiency},
          {"cpu_attn_decode_efficiency", &cpu_attn_decode_efficiency},
          {"thread_efficiency_prefill", &thread_efficiency_prefill},
          {"thread_efficiency_decode", &thread_efficiency_decode},
          {"smt_gain", &smt_gain},
          {"cpu_layer_overhead_us", &cpu_layer_overhead_us},
          {"llc_bw_factor", &llc_bw_factor},
          {"gpu_bw_efficiency", &gpu_bw_efficiency},
          {"gpu_compute_efficiency", &gpu_compute_efficiency},
          {"gpu_layer_overhead_us", &gpu_layer_overhead_us},
          {"handover_us", &handover_us},
          {"link_efficiency", &link_efficiency},
          {"spill_efficiency", &spill_efficiency},
          {"spill_latency_us", &spill_latency_us},
          {"activation_traffic", &activation_traffic},
          {"rpc_link_gbps", &rpc_link_gbps},
          {"rpc_handover_us", &rpc_handover_us},
          {"rpc_layer_overhead_us", &rpc_layer_overhead_us}};
}

std::vector<std::pair<std::string, double>> CalibrationConstants::Values() const {
  CalibrationConstants copy = *this;
  std::vector<std::pair<std::string, double>> out;
  for (auto& [name, ptr] : copy.Fields()) out.emplace_back(name, *ptr);
  return out;
}

json CalibrationConstantsToJson(const CalibrationConstants& c) {
  json j = json::object();
  for (const auto& [name, v] : c.Values()) j[name] = v;
  return j;
}

Result<CalibrationConstants> CalibrationConstantsFromJson(const json& j) {
  CalibrationConstants c;
  if (!j.is_object()) return Error(ErrorKind::kFormat, "calibration constants are not an object");
  for (auto& [name, ptr] : c.Fields()) {
    auto it = j.find(name);
    if (it == j.end()) continue;
    // Thread efficiencies may be negative on a loaded machine (see docs); all
    // other constants are positive.
    const bool may_be_negative = name.rfind("thread_efficiency", 0) == 0;
    if (!it->is_number() || !std::isfinite(it->get<double>()) ||
        (!may_be_negative && it->get<double>() <= 0) || it->get<double>() < -1) {
      return Error(ErrorKind::kFormat,
                   fmt::format("calibration constant '{}' is {}; expected a positive number (run "
                               "`moetune calibrate` again)",
                               name, it->dump()));
    }
    *ptr = it->get<double>();
  }
  return c;
}

namespace {

json PointToJson(const CalibrationPoint& p) {
  return {{"label", p.label},
          {"prefill", p.prefill},
          {"threads", p.threads},
          {"n_ubatch", p.n_ubatch},
          {"n_depth", p.n_depth},
          {"n_tokens", p.n_tokens},
          {"n_cpu_moe", p.n_cpu_moe},
          {"n_gpu_layers", p.n_gpu_layers},
          {"rpc", p.rpc},
          {"measured_tps", p.measured_tps},
          {"predicted_default_tps", p.predicted_default_tps},
          {"predicted_tps", p.predicted_tps},
          {"spread", p.spread},
          {"rounds", p.rounds},
          {"unstable", p.unstable}};
}

// A rate or a count beyond any machine's is a damaged record.
constexpr double kMaxRate = 1e9;
constexpr int64_t kMaxCount = int64_t{1} << 30;

CalibrationPoint PointFromJson(const json& j, const std::string& where, JsonFields* parent) {
  JsonFields f(j, where);
  CalibrationPoint p;
  p.label = f.String("label", "");
  p.prefill = f.Bool("prefill", true);
  p.threads = static_cast<int>(f.Int("threads", 1, kMaxCount, 1));
  p.n_ubatch = static_cast<int>(f.Int("n_ubatch", 1, kMaxCount, 512));
  p.n_depth = static_cast<int>(f.Int("n_depth", 0, kMaxCount, 0));
  p.n_tokens = static_cast<int>(f.Int("n_tokens", 0, kMaxCount, 0));
  p.n_cpu_moe = static_cast<int>(f.Int("n_cpu_moe", 0, kMaxCount, 0));
  p.n_gpu_layers = static_cast<int>(f.Int("n_gpu_layers", 0, kMaxCount, 0));
  p.rpc = f.Bool("rpc", false);
  p.measured_tps = f.Number("measured_tps", 0, kMaxRate, 0.0);
  p.predicted_default_tps = f.Number("predicted_default_tps", 0, kMaxRate, 0.0);
  p.predicted_tps = f.Number("predicted_tps", 0, kMaxRate, 0.0);
  p.spread = f.Number("spread", 0, kMaxRate, 0.0);
  p.rounds = static_cast<int>(f.Int("rounds", 1, kMaxCount, 1));
  p.unstable = f.Bool("unstable", false);
  parent->Merge(f);
  return p;
}

json UncertaintyToJson(const CalibrationUncertainty& u) {
  json j = {{"held_out_folds", u.held_out_folds},
            {"held_out_prefill", u.held_out_prefill},
            {"held_out_decode", u.held_out_decode},
            {"spread_median", u.spread_median},
            {"spread_max", u.spread_max}};
  j["other_cores_max"] = u.other_cores_max ? json(*u.other_cores_max) : json(nullptr);
  return j;
}

CalibrationUncertainty UncertaintyFromJson(const json& j, JsonFields* parent) {
  JsonFields f(j, "calibration.uncertainty");
  CalibrationUncertainty u;
  u.held_out_folds = static_cast<int>(f.Int("held_out_folds", 0, kMaxCount, 0));
  u.held_out_prefill = f.Number("held_out_prefill", 0, kMaxRate, 0.0);
  u.held_out_decode = f.Number("held_out_decode", 0, kMaxRate, 0.0);
  u.spread_median = f.Number("spread_median", 0, kMaxRate, 0.0);
  u.spread_max = f.Number("spread_max", 0, kMaxRate, 0.0);
  u.other_cores_max = f.OptionalNumber("other_cores_max", 0, kMaxRate);
  parent->Merge(f);
  return u;
}

}  // namespace

json CalibrationRecordToJson(const CalibrationRecord& r) {
  json points = json::array();
  for (const auto& p : r.points) points.push_back(PointToJson(p));
  return {{"constants", CalibrationConstantsToJson(r.constants)},
          {"fitted", r.fitted},
          {"created_at", r.created_at},
          {"engine_version", r.engine_version},
          {"engine_build", r.engine_build},
          {"model_path", r.model_path},
          {"model_name", r.model_name},
          {"hostname", r.hostname},
          {"median_error_default", r.median_error_default},
          {"median_error", r.median_error},
          {"uncertainty", UncertaintyToJson(r.uncertainty)},
          {"points", points}};
}

Result<CalibrationRecord> CalibrationRecordFromJson(const json& j) {
  CalibrationRecord r;
  JsonFields f(j, "calibration");
  if (const json* constants = f.Object("constants")) {
    auto c = CalibrationConstantsFromJson(*constants);
    if (!c.ok()) return c.take_error().Context("calibration record");
    r.constants = *c;
  }
  r.fitted = f.Strings("fitted");
  r.created_at = f.String("created_at", "");
  r.engine_version = f.String("engine_version", "");
  r.engine_build = f.Int("engine_build", -1, INT64_MAX, -1);
  r.model_path = f.String("model_path", "");
  r.model_name = f.String("model_name", "");
  r.hostname = f.String("hostname", "");
  r.median_error_default = f.Number("median_error_default", 0, kMaxRate, 0.0);
  r.median_error = f.Number("median_error", 0, kMaxRate, 0.0);
  if (const json* u = f.OptionalObject("uncertainty")) r.uncertainty = UncertaintyFromJson(*u, &f);
  if (const json* points = f.OptionalArray("points")) {
    for (size_t i = 0; i < points->size() && f.ok(); ++i)
      r.points.push_back(PointFromJson((*points)[i], fmt::format("calibration.points[{}]", i), &f));
  }
  if (!f.ok()) {
    return Error(ErrorKind::kFormat, fmt::format("calibration record: {} (run `moetune calibrate` "
                                                 "again)",
                                                 f.error().message()));
  }
  return r;
}

}  // namespace moetune
