#include "speed/public_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "model/context_support.h"
#include "model/synth.h"
#include "model/synth_sparse.h"
#include "model/synth_spec.h"
#include "speed/calibration_fit.h"
#include "speed/presets.h"
#include "util/json_fields.h"
#include "util/read_file.h"

namespace moetune {
namespace {

using nlohmann::json;

constexpr double kMaxTps = 1e7;

// The what-if machine of a point: presets, then the parts the source measured.
Status ReadMachine(const json& j, const std::string& where, MachineSpec* m) {
  JsonFields f(j, where);
  *m = DefaultMachineSpec();
  std::string presets;
  for (const char* key : {"gpu", "ram", "cpu"}) {
    const std::string v = f.String(key, "");
    if (!v.empty()) presets += (presets.empty() ? "" : ",") + v;
  }
  const std::string shape = f.String("cpu_shape", "");
  const double ghz = f.Number("cpu_ghz", 0.5, 10, 0);
  const double ram = f.Number("ram_read_gbps", 0, 10000, 0);
  const int64_t llc = f.Int("llc_mib", 0, 1 << 20, 0);
  if (!f.ok()) return f.error();
  if (!presets.empty()) MOETUNE_TRY(ApplyMachinePresets(presets, m));
  if (!shape.empty()) MOETUNE_TRY(ParseCpuShape(shape, &m->cpu));
  // Per-core f32 peak from the clock: two 256-bit FMA pipes, as the presets.
  if (ghz > 0) m->cpu.core_peak_gflops = ghz * 32;
  if (ram > 0) m->ram.read_gbps = ram;
  if (llc > 0) m->cpu.llc_bytes = llc << 20;
  // The published run loaded: its GPU had room for it (the fit is about speed,
  // not about this machine's free VRAM).
  if (m->accel()) m->accel()->vram_free = m->accel()->vram_total;
  m->label = "public point " + where;
  return OkStatus();
}

Status ReadRun(const json& j, const std::string& where, int n_layer_hint, RunSettings* r,
               bool* prefill) {
  JsonFields f(j, where);
  *r = RunSettings{};
  r->n_gpu_layers = static_cast<int>(f.Int("n_gpu_layers", -1, 1000, 99));
  r->n_cpu_moe = static_cast<int>(f.Int("n_cpu_moe", 0, 1000, 0));
  if (f.Bool("cpu_moe", false)) r->n_cpu_moe = n_layer_hint;
  r->override_tensor = f.String("override_tensor", "");
  r->threads = static_cast<int>(f.Int("threads", 1, 1024));
  r->n_ubatch = static_cast<int>(f.Int("n_ubatch", 1, 65536, 512));
  r->n_batch = static_cast<int>(f.Int("n_batch", 1, 65536, std::max(2048, r->n_ubatch)));
  r->n_ctx = f.Int("n_ctx", 0, 1 << 24, 0);
  r->n_depth = static_cast<int>(f.Int("n_depth", 0, 1 << 24, 0));
  r->pinned = f.Bool("no_mmap", false);
  const std::string tk = f.String("type_k", "f16"), tv = f.String("type_v", "f16");
  const std::string test = f.String("test");
  const int tokens = static_cast<int>(f.Int("tokens", 1, 1 << 20));
  if (!f.ok()) return f.error();
  MOETUNE_ASSIGN_OR_RETURN(r->type_k, ParseKvCacheType(tk));
  MOETUNE_ASSIGN_OR_RETURN(r->type_v, ParseKvCacheType(tv));
  if (test != "pp" && test != "tg") {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{}.test: '{}' is neither pp nor tg", where, test));
  }
  *prefill = test == "pp";
  r->n_prompt = *prefill ? tokens : 0;
  r->n_gen = *prefill ? 0 : tokens;
  return OkStatus();
}

double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 1;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(sorted.size() - 1, lo + 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

}  // namespace

Result<std::vector<PublicPoint>> LoadPublicPoints(const std::string& path) {
  MOETUNE_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, std::size_t{16} << 20));
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return Error(ErrorKind::kInvalidArgument, path + ": not valid JSON");
  }
  JsonFields top(root, "");
  const json* arr = top.Array("points");
  if (!top.ok()) return top.error().Context(path);
  std::vector<PublicPoint> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    const std::string where = fmt::format("points[{}]", i);
    JsonFields f((*arr)[i], where);
    PublicPoint p;
    p.id = f.String("id");
    p.source = f.String("source");
    p.reported = f.String("reported");
    p.tool = f.String("tool");
    p.assumed = f.Strings("assumed");
    p.tokens_per_second = f.Number("tokens_per_second", 1e-6, kMaxTps);
    const json* model = f.Object("model");
    const json* machine = f.Object("machine");
    const json* run = f.Object("run");
    if (!f.ok()) return f.error().Context(path);
    JsonFields mf(*model, where + ".model");
    p.model_preset = mf.String("preset");
    const std::string quant = mf.String("quant");
    if (!mf.ok()) return mf.error().Context(path);
    MOETUNE_ASSIGN_OR_RETURN(p.quant, ParseSynthQuant(quant));
    auto spec = SynthPreset(p.model_preset);
    if (!spec.ok()) return spec.error().Context(fmt::format("{} {}.model.preset", path, where));
    MOETUNE_TRY(ReadMachine(*machine, where + ".machine", &p.machine));
    MOETUNE_TRY(ReadRun(*run, where + ".run", static_cast<int>(spec->n_layer), &p.run, &p.prefill));
    p.expert_offload =
        p.run.n_cpu_moe > 0 || p.run.override_tensor.find("exps") != std::string::npos;
    out.push_back(std::move(p));
  }
  return out;
}

Result<PublicSet> PublicSet::Prepare(std::vector<PublicPoint> points, const std::string& dir) {
  PublicSet set;
  std::map<std::string, std::shared_ptr<ModelInfo>> models;
  for (const auto& p : points) {
    const std::string key = p.model_preset + "-" + SynthQuantName(p.quant);
    auto it = models.find(key);
    if (it == models.end()) {
      SynthOptions o;
      MOETUNE_ASSIGN_OR_RETURN(o.spec, SynthPreset(p.model_preset));
      o.quant = p.quant;
      const std::string path = (std::filesystem::path(dir) / (key + ".gguf")).string();
      MOETUNE_TRY(WriteSparseSynthModel(o, path));
      MOETUNE_ASSIGN_OR_RETURN(ModelInfo info, LoadModelInfo(path));
      it = models.emplace(key, std::make_shared<ModelInfo>(std::move(info))).first;
    }
    set.models_.push_back(it->second);
    set.speed_.push_back(std::make_shared<SpeedModel>(*it->second, p.machine));
  }
  set.points_ = std::move(points);
  return set;
}

double PublicSet::Predict(size_t i, const CalibrationConstants& constants) const {
  SpeedModel& m = *speed_.at(i);
  m.set_constants(constants);
  auto p = m.Predict(points_[i].run);
  if (!p.ok() || !p->loads) return 0;
  return points_[i].prefill ? p->prefill.tokens_per_second : p->decode.tokens_per_second;
}

double PublicSet::Loss(const CalibrationConstants& constants, const std::vector<bool>& use) const {
  double s = 0;
  for (size_t i = 0; i < points_.size(); ++i) {
    if (i < use.size() && !use[i]) continue;
    const double pred = Predict(i, constants);
    const double e = pred > 0 ? std::log(pred / points_[i].tokens_per_second) : 5.0;
    s += e * e;
  }
  return s;
}

const std::vector<std::string>& PublicFitConstants() {
  // The prefill constants (link_efficiency, gpu_compute_efficiency) stay with
  // the prefill anchors of docs/speed-model.md: the published prefill runs here
  // come from two machines whose RAM and CPU are not stated and disagree with
  // the anchors by 2-3x, so they widen the prefill band instead of moving them.
  static const std::vector<std::string> kNames = {"cpu_bw_efficiency", "cpu_matvec_efficiency",
                                                  "gpu_bw_efficiency", "handover_us"};
  return kNames;
}

CalibrationConstants FitPublic(const PublicSet& set, const CalibrationConstants& start,
                               const std::vector<bool>& use, int sweeps) {
  return MinimizeConstants(
      PublicFitConstants(), start, [&](const CalibrationConstants& c) { return set.Loss(c, use); },
      sweeps);
}

SpeedBand BandOfRatios(std::vector<double> ratios, double coverage) {
  ratios.erase(std::remove_if(ratios.begin(), ratios.end(), [](double r) { return !(r > 0); }),
               ratios.end());
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - coverage) / 2;
  // The band always holds the prediction itself: a band beside it would say
  // the prediction is biased, which a fit corrects rather than a band.
  return SpeedBand{std::min(1.0, Quantile(ratios, tail)),
                   std::max(1.0, Quantile(ratios, 1 - tail))};
}

PublicFitResult FitAndLeaveOneOut(const PublicSet& set, const CalibrationConstants& start,
                                  int sweeps) {
  PublicFitResult r;
  const size_t n = set.points().size();
  r.constants = FitPublic(set, start, std::vector<bool>(n, true), sweeps);
  std::vector<double> pp, tg;
  for (size_t i = 0; i < n; ++i) {
    std::vector<bool> use(n, true);
    use[i] = false;
    const CalibrationConstants c = FitPublic(set, start, use, sweeps);
    LeaveOneOutRow row;
    row.id = set.points()[i].id;
    row.prefill = set.points()[i].prefill;
    row.measured = set.points()[i].tokens_per_second;
    row.fitted = set.Predict(i, r.constants);
    row.left_out = set.Predict(i, c);
    (row.prefill ? pp : tg).push_back(row.ratio());
    r.rows.push_back(row);
  }
  r.band = UncalibratedUncertainty();
  r.band.prefill = BandOfRatios(pp, r.band.coverage);
  r.band.decode = BandOfRatios(tg, r.band.coverage);
  r.band.points = static_cast<int>(n);
  return r;
}

}  // namespace moetune
