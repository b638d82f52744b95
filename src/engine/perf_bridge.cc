#include "engine/perf_bridge.h"

#include <fmt/format.h>

#include <algorithm>

#include "gguf/ggml_type.h"
#include "stats/summary.h"

namespace moetune {
namespace {

Result<uint32_t> CacheTypeId(const std::string& name) {
  if (name.empty()) return ggml_type::kF16;
  auto t = GgmlTypeByName(name);
  if (!t) {
    return Error(
        ErrorKind::kInvalidArgument,
        fmt::format("cache type '{}' is unknown to the speed model; use f16, q8_0, ...", name));
  }
  return t->id;
}

}  // namespace

double SampleStat(std::vector<double> v, MeasurementStat stat) {
  if (v.empty()) return 0;
  if (stat == MeasurementStat::kBest) return BestRepetition(std::move(v));
  if (stat == MeasurementStat::kMedian) return Median(std::move(v));
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

Result<MeasurementStat> ParseMeasurementStat(std::string_view text) {
  if (text == "best") return MeasurementStat::kBest;
  if (text == "median") return MeasurementStat::kMedian;
  if (text == "mean") return MeasurementStat::kMean;
  return Error(ErrorKind::kInvalidArgument,
               fmt::format("--stat '{}': use best, median or mean", text));
}

std::string MeasurementLabel(const RunSettings& r) {
  std::string test = r.n_prompt > 0 && r.n_gen == 0 ? fmt::format("pp{}", r.n_prompt)
                                                    : fmt::format("tg{}", r.n_gen);
  return fmt::format("{} t={} ub={} d={} ngl={} ncmoe={}", test, r.threads, r.n_ubatch, r.n_depth,
                     r.n_gpu_layers, r.n_cpu_moe);
}

Result<RunSettings> RunSettingsFromConfig(const RunConfig& c) {
  RunSettings r;
  r.n_gpu_layers = c.placement.n_gpu_layers;
  // --n-cpu-moe as the engine is given it: experts kept from the last layers or
  // per device travel in the -ot rules (OverrideTensor), and N is then only
  // the family's count; taking it as --n-cpu-moe too kept the experts of
  // another N layers on the CPU in the simulated engine.
  r.n_cpu_moe = c.placement.cpu_experts == CpuExpertsFrom::kFirst ? c.placement.n_cpu_moe : 0;
  r.override_tensor = c.placement.OverrideTensor();
  r.devices = c.placement.devices;
  r.threads = c.threads;
  r.n_ubatch = c.n_ubatch;
  r.n_batch = c.n_batch;
  MOETUNE_ASSIGN_OR_RETURN(r.type_k, CacheTypeId(GgmlTypeName(c.type_k)));
  MOETUNE_ASSIGN_OR_RETURN(r.type_v, CacheTypeId(GgmlTypeName(c.type_v)));
  // -fa auto turns flash attention on for the CPU and CUDA backends.
  r.flash_attn = c.flash_attn != FlashAttn::kOff;
  r.pinned = LoadModeIsPinned(LoadModeName(c.load_mode));
  r.n_prompt = c.n_prompt;
  r.n_gen = c.n_gen;
  r.n_depth = c.n_depth;
  if (c.ctx_size > 0) r.n_ctx = c.ctx_size;
  return r;
}

Result<Measurement> MeasurementFromRecord(const BenchRecord& rec, MeasurementStat stat) {
  Measurement m;
  RunSettings& r = m.run;
  r.n_prompt = rec.n_prompt;
  r.n_gen = rec.n_gen;
  r.n_depth = rec.n_depth;
  r.threads = rec.n_threads;
  r.n_batch = rec.n_batch > 0 ? rec.n_batch : 2048;
  r.n_ubatch = rec.n_ubatch > 0 ? rec.n_ubatch : 512;
  r.n_gpu_layers = rec.n_gpu_layers;
  r.n_cpu_moe = rec.n_cpu_moe;
  MOETUNE_ASSIGN_OR_RETURN(r.type_k, CacheTypeId(rec.type_k));
  MOETUNE_ASSIGN_OR_RETURN(r.type_v, CacheTypeId(rec.type_v));
  r.flash_attn = rec.flash_attn != "off";
  const auto& raw = rec.raw;
  if (raw.contains("load_mode") && raw["load_mode"].is_string())
    r.pinned = LoadModeIsPinned(raw["load_mode"].get<std::string>());
  if (raw.contains("no_op_offload") && raw["no_op_offload"].is_number())
    r.op_offload = raw["no_op_offload"].get<double>() == 0;
  if (raw.contains("tensor_buft_overrides") && raw["tensor_buft_overrides"].is_string()) {
    const std::string ot = raw["tensor_buft_overrides"].get<std::string>();
    if (ot != "none") r.override_tensor = ot;
  }
  m.rpc = rec.backends.find("RPC") != std::string::npos;
  if (raw.contains("model_filename") && raw["model_filename"].is_string())
    m.model_file = raw["model_filename"].get<std::string>();
  if (r.n_prompt <= 0 && r.n_gen <= 0)
    return Error(ErrorKind::kFormat, "llama-bench record with neither n_prompt nor n_gen");
  m.tokens_per_second = rec.samples_ts.empty() ? rec.avg_ts : SampleStat(rec.samples_ts, stat);
  m.samples = rec.samples_ts.empty() ? std::vector<double>{rec.avg_ts} : rec.samples_ts;
  m.label = MeasurementLabel(r);
  return m;
}

std::vector<Measurement> MergeMeasurements(const std::vector<Measurement>& ms,
                                           MeasurementStat stat) {
  std::vector<Measurement> out;
  for (const auto& m : ms) {
    auto same = std::find_if(out.begin(), out.end(), [&](const Measurement& o) {
      return o.label == m.label && o.model_file == m.model_file && o.rpc == m.rpc &&
             o.run.override_tensor == m.run.override_tensor && o.run.pinned == m.run.pinned &&
             o.run.op_offload == m.run.op_offload && o.run.n_batch == m.run.n_batch &&
             o.run.type_k == m.run.type_k && o.run.type_v == m.run.type_v &&
             o.run.flash_attn == m.run.flash_attn;
    });
    if (same == out.end()) {
      out.push_back(m);
      continue;
    }
    same->samples.insert(same->samples.end(), m.samples.begin(), m.samples.end());
    if (!same->samples.empty()) same->tokens_per_second = SampleStat(same->samples, stat);
  }
  return out;
}

std::vector<Measurement> MeasurementsFromRun(const BenchRun& run, MeasurementStat stat) {
  std::vector<Measurement> out;
  for (const auto& res : run.results) {
    if (!res.ok() || res.samples_ts.empty()) continue;
    auto s = RunSettingsFromConfig(res.config);
    if (!s.ok()) continue;
    Measurement m;
    m.run = *s;
    m.tokens_per_second = SampleStat(res.samples_ts, stat);
    m.samples = res.samples_ts;
    m.label = MeasurementLabel(m.run);
    if (res.record.is_object() && res.record.contains("backends") &&
        res.record["backends"].is_string())
      m.rpc = res.record["backends"].get<std::string>().find("RPC") != std::string::npos;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace moetune
