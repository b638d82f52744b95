#include "engine/sim_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "config/flags.h"
#include "engine/perf_bridge.h"
#include "speed/speed_model.h"

namespace moetune {
namespace {

uint64_t Fnv(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// splitmix64: small, fast, and the same on every platform (std:: distributions
// are implementation-defined, which would break --seed reproducibility).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) / 9007199254740992.0; }
  double Normal() {
    const double u1 = Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// The configuration as the noise sees it: the model by its file name, so that
// the same seed gives the same samples wherever the file lives.
std::string ConfigKey(const RunConfig& config) {
  RunConfig c = config;
  c.model = std::filesystem::path(c.model).filename().string();
  const auto k = c.ContextKey();
  // The settings as they were written when this key was strings (the noise
  // of a simulated measurement is seeded from it: the same key, the same noise).
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", c.ModelKey(), std::get<0>(k),
                     std::get<1>(k), std::get<2>(k), std::get<3>(k), GgmlTypeName(std::get<4>(k)),
                     GgmlTypeName(std::get<5>(k)), FlashAttnName(std::get<6>(k)), c.n_prompt,
                     c.n_gen, c.n_depth);
}

EngineFailure LoadFailure(const std::string& message, FailureKind kind) {
  EngineFailure f;
  f.kind = kind;
  f.exit = "exit code 1";
  size_t start = 0;
  while (start < message.size()) {
    size_t nl = message.find('\n', start);
    if (nl == std::string::npos) nl = message.size();
    f.stderr_tail.push_back(message.substr(start, nl - start));
    start = nl + 1;
  }
  f.message = f.stderr_tail.empty() ? message : f.stderr_tail.front();
  return f;
}

// A run ended (or not started) at the caller's time limit (Engine::set_time_limit).
EngineFailure TimeLimitFailure() {
  EngineFailure f;
  f.kind = FailureKind::kTimeout;
  f.exit = "signal 15 (SIGTERM)";
  f.message = "ended at the time limit (simulated)";
  return f;
}

nlohmann::json SplitJson(const TimeSplit& t) {
  nlohmann::json j = nlohmann::json::object();
  for (int r = 0; r < kResourceCount; ++r) {
    const double v = t.seconds[static_cast<size_t>(r)];
    if (v > 0) j[ResourceName(static_cast<Resource>(r))] = v;
  }
  return j;
}

// [low, high] tokens/s of the phase the test measures, under its band.
nlohmann::json PredictedRange(const SpeedPrediction& p, bool decode) {
  const SpeedBand& b = decode ? p.uncertainty.decode : p.uncertainty.prefill;
  return nlohmann::json::array({p.tokens_per_second * b.low, p.tokens_per_second * b.high});
}

// The command line a simulated invocation stands for.
std::vector<std::string> SimArgv(const RunConfig& first, uint64_t seed) {
  return {"moetune-sim",
          Flag(FlagId::kModel).SpellingFor(kToolBench),
          first.model,
          Flag(FlagId::kGpuLayers).SpellingFor(kToolBench),
          std::to_string(first.placement.n_gpu_layers),
          Flag(FlagId::kNCpuMoe).SpellingFor(kToolBench),
          std::to_string(first.placement.n_cpu_moe),
          "--seed",
          std::to_string(seed)};
}

// The mean and sample standard deviation of a result's tokens/s, and its mean
// nanoseconds.
struct SampleStats {
  double mean = 0, sd = 0, mean_ns = 0;
};

SampleStats StatsOf(const RunResult& res) {
  SampleStats st;
  for (double v : res.samples_ts) st.mean += v;
  st.mean /= static_cast<double>(res.samples_ts.size());
  for (double v : res.samples_ts) st.sd += (v - st.mean) * (v - st.mean);
  st.sd = res.samples_ts.size() > 1
              ? std::sqrt(st.sd / static_cast<double>(res.samples_ts.size() - 1))
              : 0;
  for (int64_t v : res.samples_ns) st.mean_ns += static_cast<double>(v);
  st.mean_ns /= static_cast<double>(res.samples_ns.size());
  return st;
}

// The llama-bench JSON record of a simulated result, with what the speed
// model predicted and why.
nlohmann::json SimRecord(const SimEngineOptions& o, const std::string& backends, const ModelInfo& m,
                         const SpeedPrediction& pred, const SampleStats& stats,
                         const RunResult& res) {
  const RunConfig& c = res.config;
  return {
      {"build_commit", "simulated"},
      {"build_number", 0},
      {"cpu_info", o.machine.cpu.name},
      {"gpu_info", o.machine.accel() ? o.machine.accel()->name : ""},
      {"backends", backends},
      {"model_filename", std::filesystem::path(c.model).filename().string()},
      {"model_type", m.arch.hp.arch},
      {"model_size", m.weights.total},
      {"n_batch", c.n_batch},
      {"n_ubatch", c.n_ubatch},
      {"n_threads", c.threads},
      {"type_k", GgmlTypeName(c.type_k)},
      {"type_v", GgmlTypeName(c.type_v)},
      {"n_gpu_layers", c.placement.n_gpu_layers},
      {"n_cpu_moe", c.placement.n_cpu_moe},
      {"flash_attn", c.flash_attn == FlashAttn::kDefault ? "auto" : FlashAttnName(c.flash_attn)},
      {"tensor_buft_overrides",
       c.placement.OverrideTensor().empty() ? "none" : c.placement.OverrideTensor()},
      {"load_mode", c.load_mode == LoadMode::kDefault ? "auto" : LoadModeName(c.load_mode)},
      {"n_prompt", c.n_prompt},
      {"n_gen", c.n_gen},
      {"n_depth", c.n_depth},
      {"avg_ns", static_cast<int64_t>(stats.mean_ns)},
      {"avg_ts", stats.mean},
      {"stddev_ts", stats.sd},
      {"samples_ns", res.samples_ns},
      {"samples_ts", res.samples_ts},
      {"simulated", true},
      {"sim_seed", o.seed},
      {"sim_machine", o.machine.label},
      {"predicted_tps", pred.tokens_per_second},
      // The range the real engine may measure in (speed/uncertainty.h).
      {"calibrated", pred.uncertainty.calibrated},
      {"predicted_tps_range", PredictedRange(pred, c.n_gen > 0 && c.n_prompt == 0)},
      {"binding",
       ResourceName(c.n_gen > 0 && c.n_prompt == 0 ? pred.decode.binding : pred.prefill.binding)},
      {"time_split_per_token",
       SplitJson(c.n_gen > 0 && c.n_prompt == 0 ? pred.decode.per_token : pred.prefill.per_token)},
      {"spill_bytes", pred.spill_bytes},
      {"gpu_bytes", pred.gpu_bytes},
      {"notes", pred.notes}};
}

}  // namespace

std::shared_ptr<FootprintPlans> SimPlanCache::For(const std::string& model_path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& plans = plans_[model_path];
  if (!plans) plans = std::make_shared<FootprintPlans>();
  return plans;
}

SimEngine::SimEngine(SimEngineOptions options) : options_(std::move(options)) {}

std::string SimEngine::BackendsLabel() const {
  const auto& devices = options_.machine.devices;
  if (devices.empty()) return "SIM CPU";
  std::string out = "SIM";
  for (const AcceleratorSpec& a : devices) {
    out += fmt::format("{} {} ({}{})", out == "SIM" ? "" : " +",
                       a.kind == AcceleratorKind::kRpcCpu ? "RPC" : "CUDA",
                       a.count > 1 ? fmt::format("{}x ", a.count) : "", a.name);
  }
  return out;
}

EngineInfo SimEngine::Info() const {
  EngineInfo e;
  e.dir = "(simulated)";
  e.origin = "simulated";
  e.version_line = fmt::format("moetune simulated engine (speed model), seed {}", options_.seed);
  e.version = MOETUNE_VERSION;
  e.backends = {"SIM"};
  return e;
}

Result<const SpeedModel*> SimEngine::Model(const std::string& path) {
  auto it = speed_models_.find(path);
  if (it != speed_models_.end()) return it->second.get();
  MOETUNE_ASSIGN_OR_RETURN(ModelInfo m, LoadModelInfo(path));
  auto owned = std::make_unique<ModelInfo>(std::move(m));
  auto sm = std::make_unique<SpeedModel>(*owned, options_.machine, options_.constants);
  if (options_.plans) sm->UseFootprintPlans(options_.plans->For(path));
  sm->set_uncertainty(options_.uncertainty);
  const SpeedModel* raw = sm.get();
  models_[path] = std::move(owned);
  speed_models_[path] = std::move(sm);
  return raw;
}

void SimEngine::Simulate(const SpeedModel& sm, const std::string& backends, RunResult* res,
                         InvocationReport* inv, double* wall) {
  const RunConfig& c = res->config;
  auto settings = RunSettingsFromConfig(c);
  if (!settings.ok()) {
    res->failure = LoadFailure(settings.error().message(), FailureKind::kInvalidConfig);
    return;
  }
  auto pred = sm.Predict(*settings);
  if (!pred.ok()) {
    res->failure = LoadFailure(pred.error().message(), FailureKind::kInvalidConfig);
    return;
  }
  if (!pred->loads) {
    res->failure = LoadFailure(pred->failure, FailureKind::kOutOfMemoryDevice);
    inv->exit = "exit code 1";
    inv->failure = res->failure;
    return;
  }
  // The ideal time of one repetition, then seeded noise around it.
  const double tokens = c.n_prompt + c.n_gen;
  const double ideal = tokens / std::max(1e-9, pred->tokens_per_second);
  const std::string key = ConfigKey(c);
  const uint64_t earlier = runs_[key]++;
  Rng rng(Fnv(key, options_.seed * 0x9e3779b97f4a7c15ull + 1) + earlier * 0xd1b54a32d192ed03ull);
  const double cv = pred->noise_cv;
  double busy = 1;
  if (options_.background_cores) {
    const double others = std::max(0.0, options_.background_cores(results_simulated_));
    res->other_cpu_cores = others;
    busy = 1 + others / std::max(1, c.threads);
  }
  if (options_.throttle) busy *= std::max(1.0, options_.throttle(results_simulated_, c));
  ++results_simulated_;
  for (int r = 0; r < std::max(1, c.repetitions); ++r) {
    double t = ideal * busy * std::exp(cv * rng.Normal() - 0.5 * cv * cv);
    if (rng.Uniform() < options_.outlier_probability) {
      t *= 1.25 + (options_.outlier_max_slowdown - 1.25) * rng.Uniform();
    }
    res->samples_ns.push_back(static_cast<int64_t>(t * 1e9));
    res->samples_ts.push_back(tokens / t);
    *wall += t;
  }
  const SampleStats stats = StatsOf(*res);
  res->avg_ts = stats.mean;
  res->stddev_ts = stats.sd;
  // Warm-up and the depth fill cost simulated time too.
  *wall += ideal;
  if (c.n_depth > 0) {
    RunSettings fill = *settings;
    fill.n_prompt = c.n_depth;
    fill.n_gen = 0;
    fill.n_depth = 0;
    auto fp = sm.Predict(fill);
    if (fp.ok() && fp->loads) *wall += c.n_depth / std::max(1e-9, fp->tokens_per_second);
  }
  res->record = SimRecord(options_, backends, sm.model(), *pred, stats, *res);
}

void SimEngine::SimulateWithinLimit(const SpeedModel& sm, const std::string& backends, double spent,
                                    RunResult* res, InvocationReport* inv, double* wall) {
  const std::optional<double> limit = time_limit();
  if (!limit || spent + *wall < *limit) {
    Simulate(sm, backends, res, inv, wall);
    if (!limit || spent + *wall <= *limit) return;
  }
  // Not started, or ended at the limit as the real engine's process would be:
  // the result is lost and the simulated time stops at the limit.
  RunResult cut;
  cut.config = res->config;
  cut.invocation = res->invocation;
  cut.failure = TimeLimitFailure();
  *res = std::move(cut);
  *wall = std::max(0.0, *limit - spent);
  if (!inv->time_limit_reached) {
    inv->time_limit_reached = true;
    inv->exit = "signal 15 (SIGTERM)";
    inv->timed_out = true;
    inv->failure = res->failure;
  }
}

BenchRun SimEngine::Run(const std::vector<RunConfig>& configs, const ProgressCallback& progress) {
  const auto start = std::chrono::steady_clock::now();
  BenchRun run;
  run.backends = BackendsLabel();
  run.results.resize(configs.size());
  // One simulated process per model key, in first-appearance order (as llama-bench).
  std::vector<std::string> keys;
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string k = configs[i].ModelKey();
    if (!groups.count(k)) keys.push_back(k);
    groups[k].push_back(i);
  }
  BenchProgress p;
  p.tests_total = configs.size();
  p.invocations_total = keys.size();
  double spent = 0;  // simulated seconds of the invocations before this one
  for (size_t g = 0; g < keys.size(); ++g) {
    const auto& members = groups[keys[g]];
    InvocationReport inv;
    inv.configs = members;
    const RunConfig& first = configs[members.front()];
    inv.argv = SimArgv(first, options_.seed);
    inv.exit = "exit code 0";
    const int inv_index = static_cast<int>(run.invocations.size());
    p.invocation = g + 1;
    auto model = Model(first.model);
    int loads = 0;
    double wall = 0;
    const SpeedModel* sm = model.ok() ? *model : nullptr;
    if (sm != nullptr) {
      wall += static_cast<double>(sm->model().weights.total) / (options_.load_gbps * 1e9);
      loads = 1;
    }
    for (size_t i : members) {
      const RunConfig& c = configs[i];
      RunResult& res = run.results[i];
      res.config = c;
      res.invocation = inv_index;
      p.current = fmt::format("{} t={} (simulated)", c.test_name(), c.threads);
      if (progress) progress(p);
      ++p.tests_done;
      if (!model.ok()) {
        res.failure =
            LoadFailure("llama_model_load: error loading model: " + model.error().message() +
                            "\nllama_model_load_from_file_impl: failed to load model",
                        FailureKind::kModelLoad);
        inv.exit = "exit code 1";
        inv.failure = res.failure;
        continue;
      }
      SimulateWithinLimit(*sm, run.backends, spent, &res, &inv, &wall);
    }
    spent += wall;
    inv.model_loads = loads;
    // Simulated seconds the real engine would have taken (tune budgets by them).
    inv.wall_seconds = wall;
    run.invocations.push_back(std::move(inv));
  }
  p.tests_done = configs.size();
  p.current = "";
  p.elapsed_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (progress) progress(p);
  return run;
}

}  // namespace moetune
