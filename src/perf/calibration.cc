#include "perf/calibration.h"

#include <fmt/format.h>

#include <cmath>

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
          {"predicted_tps", p.predicted_tps}};
}

CalibrationPoint PointFromJson(const json& j) {
  CalibrationPoint p;
  p.label = j.value("label", "");
  p.prefill = j.value("prefill", true);
  p.threads = j.value("threads", 1);
  p.n_ubatch = j.value("n_ubatch", 512);
  p.n_depth = j.value("n_depth", 0);
  p.n_tokens = j.value("n_tokens", 0);
  p.n_cpu_moe = j.value("n_cpu_moe", 0);
  p.n_gpu_layers = j.value("n_gpu_layers", 0);
  p.rpc = j.value("rpc", false);
  p.measured_tps = j.value("measured_tps", 0.0);
  p.predicted_default_tps = j.value("predicted_default_tps", 0.0);
  p.predicted_tps = j.value("predicted_tps", 0.0);
  return p;
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
          {"points", points}};
}

Result<CalibrationRecord> CalibrationRecordFromJson(const json& j) {
  CalibrationRecord r;
  if (!j.is_object()) return Error(ErrorKind::kFormat, "calibration record is not an object");
  try {
    MOETUNE_ASSIGN_OR_RETURN(r.constants, CalibrationConstantsFromJson(j.at("constants")));
    r.fitted = j.value("fitted", std::vector<std::string>{});
    r.created_at = j.value("created_at", "");
    r.engine_version = j.value("engine_version", "");
    r.engine_build = j.value("engine_build", int64_t{-1});
    r.model_path = j.value("model_path", "");
    r.model_name = j.value("model_name", "");
    r.hostname = j.value("hostname", "");
    r.median_error_default = j.value("median_error_default", 0.0);
    r.median_error = j.value("median_error", 0.0);
    for (const auto& p : j.value("points", json::array())) r.points.push_back(PointFromJson(p));
  } catch (const json::exception& e) {
    return Error(ErrorKind::kFormat,
                 fmt::format("calibration record: {} (run `moetune calibrate` again)", e.what()));
  }
  return r;
}

}  // namespace moetune
