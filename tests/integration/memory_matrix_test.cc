// Integration: moetune's memory predictions against llama.cpp's own dry run
// (llama-fit-params -fitp on -fit off -lm none --no-repack), on the host, per
// device through the engine's ggml-rpc-server (RPC0 and Host), and across two
// and three ggml-rpc-servers for the exact command `plan --vram A,B[,C]
// --check` prints (every device and the host), for every synth preset at full
// scale (header-only sparse files: the dry run reads no weights). Tolerances:
// weights and context 1%, compute 15% (plus the engine's whole-MiB
// truncation). The flags passed to the engine are a plan's ServerConfig
// written by ServerArgv, the source of the commands `plan` prints.
//
// CI runs a subset (every preset once, every flag combination for three
// presets, device splits for five, splits across devices for three);
// MOETUNE_MEMORY_MATRIX=full runs the whole matrix, and
// MOETUNE_MEMORY_MATRIX_OUT=FILE writes the tables of docs/memory.md to FILE
// (scripts/memory-matrix.sh).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "config/server_argv.h"
#include "engine/engine_info.h"
#include "engine/fit_params.h"
#include "gguf/ggml_type.h"
#include "model/model_info.h"
#include "plan/check.h"
#include "plan/launch.h"
#include "support.h"

namespace moetune::itest {
namespace {

constexpr int64_t kMiB = 1 << 20;

bool FullMatrix() {
  const char* v = std::getenv("MOETUNE_MEMORY_MATRIX");
  return v != nullptr && std::string(v) == "full";
}

const std::vector<std::string>& Presets() {
  static const std::vector<std::string> p = {
      "qwen3moe",  "qwen35moe", "qwen3next", "gpt-oss-20b", "gpt-oss-120b", "glm4moe",
      "deepseek2", "mixtral",   "llama4",    "llama",       "qwen2",        "qwen3"};
  return p;
}

// One compared cell.
struct Cell {
  double predicted_mib = 0, engine_mib = 0;
  double error = 0;  // relative, beyond the engine's rounding
  bool ok = false;
};

struct Row {
  std::string preset, side, device, config;
  int devices = 1;  // devices of the placement (2 and 3: MemoryMatrixDevices)
  Cell model, context, compute;
};

// Relative distance of `predicted` from the engine's figure: from the exact
// value when the log gave it, else from the window [e, e + 1 MiB) that the
// engine's truncated MiB stands for.
double RelError(int64_t predicted, int64_t engine, std::optional<double> precise_mib) {
  const double p = static_cast<double>(predicted);
  if (precise_mib && *precise_mib > 0) return (p / kMiB - *precise_mib) / *precise_mib;
  const double lo = static_cast<double>(engine), hi = lo + kMiB;
  if (p >= lo && p < hi) return 0.0;
  const double ref = std::max(lo, 1.0 * kMiB);
  return p < lo ? (p - lo) / ref : (p - hi) / ref;
}

// Shared state of one test process: the models, the engine, the RPC servers
// and the rows for the report.
class Matrix : public ::testing::Environment {
 public:
  static Matrix* Get();

  void TearDown() override {
    rpc_.clear();
    const char* out = std::getenv("MOETUNE_MEMORY_MATRIX_OUT");
    if (out == nullptr || rows_.empty()) return;
    std::ofstream f(out, std::ios::trunc);
    const std::string one = Summary(false), several = Summary(true);
    f << one << (one.empty() || several.empty() ? "" : "\n") << several;
  }

  // The tables of docs/memory.md: per preset and compared side (one device
  // or none), or per preset and device (splits across two and three devices),
  // how many configurations and the worst relative error of each column.
  std::string Summary(bool across_devices) const {
    struct Worst {
      int n = 0;
      double model = 0, context = 0, compute = 0, compute_lo = 1e18, compute_hi = 0;
    };
    std::map<std::pair<std::string, std::string>, Worst> w;
    for (const Row& r : rows_) {
      if ((r.devices > 1) != across_devices) continue;
      const std::string side = across_devices         ? r.device
                               : r.side == "all-host" ? "Host (no device)"
                               : r.side == "gpu"      ? r.device + " (device)"
                                                      : "Host (beside RPC0)";
      Worst& x = w[{r.preset, side}];
      ++x.n;
      x.model = std::max(x.model, std::abs(r.model.error));
      x.context = std::max(x.context, std::abs(r.context.error));
      x.compute = std::max(x.compute, std::abs(r.compute.error));
      x.compute_lo = std::min(x.compute_lo, r.compute.engine_mib);
      x.compute_hi = std::max(x.compute_hi, r.compute.engine_mib);
    }
    if (w.empty()) return "";
    std::string o = fmt::format(
        "| preset | {} | configurations | weights, worst | context, worst | compute, worst | "
        "engine compute (MiB) |\n|---|---|---:|---:|---:|---:|---|\n",
        across_devices ? "device" : "side");
    for (const std::string& p : Presets()) {
      for (const auto& [key, x] : w) {
        if (key.first != p) continue;
        o += fmt::format("| {} | {} | {} | {:.2f}% | {:.2f}% | {:.2f}% | {:.0f} - {:.0f} |\n", p,
                         key.second, x.n, 100 * x.model, 100 * x.context, 100 * x.compute,
                         x.compute_lo, x.compute_hi);
      }
    }
    return o;
  }

  const EngineInfo* Engine() {
    if (!engine_) {
      const auto dir = EngineDir();
      if (!dir) return nullptr;
      DiscoveryOptions o;
      o.llama_dir = dir->string();
      auto e = DiscoverEngine(o);
      if (!e.ok()) return nullptr;
      engine_ = std::move(e).value();
    }
    return &*engine_;
  }

  // The endpoints of `n` running ggml-rpc-servers (started on first use and
  // kept for the process); empty when one did not come up.
  std::vector<std::string> RpcEndpoints(size_t n) {
    const auto dir = EngineDir();
    while (dir && rpc_.size() < n) rpc_.push_back(std::make_unique<RpcServer>(*dir));
    std::vector<std::string> out;
    for (size_t i = 0; i < n && i < rpc_.size(); ++i) {
      if (rpc_[i]->endpoint().empty()) return {};
      out.push_back(rpc_[i]->endpoint());
    }
    return out.size() == n ? out : std::vector<std::string>{};
  }

  // The preset's real shape as a header-only (sparse) file.
  const ModelInfo* Model(const std::string& preset) {
    auto it = models_.find(preset);
    if (it != models_.end()) return &it->second;
    const std::string path = dir_.File(preset + ".gguf");
    auto r = RunCommand({MoetuneBinary(), "synth", "--preset", preset, "--scale", "full", "--quant",
                         "q4_k_m", "--sparse", "-o", path},
                        120);
    if (r.exit_code != 0) return nullptr;
    auto info = LoadModelInfo(path);
    if (!info.ok()) return nullptr;
    return &models_.emplace(preset, std::move(info).value()).first->second;
  }

  void Add(Row r) {
    std::lock_guard<std::mutex> lock(mu_);
    rows_.push_back(std::move(r));
  }

 private:
  TempDir dir_;
  std::optional<EngineInfo> engine_;
  std::vector<std::unique_ptr<RpcServer>> rpc_;
  std::map<std::string, ModelInfo> models_;
  std::mutex mu_;
  std::vector<Row> rows_;
};

Matrix* Matrix::Get() {
  static Matrix* m = static_cast<Matrix*>(::testing::AddGlobalTestEnvironment(new Matrix));
  return m;
}

// Registered before the tests run, so that TearDown writes the report.
[[maybe_unused]] const Matrix* const kRegistered = Matrix::Get();

// A configuration of the matrix: a placement and a context, as a plan holds them.
struct MatrixCase {
  WeightPlacement placement;
  ContextParams ctx;
  bool moe = false;
};

// The configuration as `plan` prints it (config/server_config.h PlannedConfig).
ServerConfig ConfigOf(const MatrixCase& c, const std::string& model) {
  return PlannedConfig(model, c.placement, c.ctx, c.moe);
}

// Its memory-shaping flags: the command without the model and -fit off.
std::string Describe(const MatrixCase& c) {
  std::vector<FlagSetting> shaping;
  for (const auto& s : ConfigSettings(ConfigOf(c, ""))) {
    if (s.flag != FlagId::kFit) shaping.push_back(s);
  }
  return ShellJoin(SettingsArgv(shaping));
}

// The compute buffers of the engine's verbose log: device ("Host", "RPC0",
// "RPC1", ...) -> MiB, to the precision the log gives. The log names an RPC
// buffer by its server ("RPC0[127.0.0.1:50301]"): its place in `rpc` is the
// device's index.
std::map<std::string, double> LoggedComputeMiB(const std::string& log,
                                               const std::vector<std::string>& rpc) {
  static const std::regex kCompute(R"(sched_reserve: +(\S+) compute buffer size = +([0-9.]+) MiB)");
  std::map<std::string, double> precise;
  std::istringstream e(log);
  std::string line;
  while (std::getline(e, line)) {
    std::smatch mm;
    if (!std::regex_search(line, mm, kCompute)) continue;
    const std::string name = mm[1].str();
    std::string dev = name.rfind("RPC", 0) == 0 ? name.substr(0, 4) : "Host";
    for (size_t i = 0; i < rpc.size(); ++i)
      if (name.find("[" + rpc[i] + "]") != std::string::npos) dev = fmt::format("RPC{}", i);
    precise[dev] = std::stod(mm[2]);
  }
  return precise;
}

// One compared cell.
Cell CellOf(int64_t predicted, int64_t engine, bool ok, std::optional<double> precise_mib) {
  Cell c;
  c.predicted_mib = static_cast<double>(predicted) / kMiB;
  c.engine_mib = precise_mib ? *precise_mib : static_cast<double>(engine) / kMiB;
  c.error = RelError(predicted, engine, precise_mib);
  c.ok = ok;
  return c;
}

// Runs the engine's dry run of `config` (with the RPC servers `rpc`) and
// compares every device line; `label` names the configuration in messages
// and the report, `devices` is the placement's device count for the report.
// Returns the engine's verbose log.
std::string CheckConfig(const std::string& preset, const ServerConfig& config,
                        const std::vector<std::string>& rpc, const std::string& label,
                        int devices) {
  Matrix* m = Matrix::Get();
  const EngineInfo* engine = m->Engine();
  const ModelInfo* model = m->Model(preset);
  EXPECT_TRUE(engine != nullptr && model != nullptr) << preset << ": engine or model missing";
  if (engine == nullptr || model == nullptr) return "";
  FitParamsOptions fo;
  fo.count_host_weights = true;
  for (const std::string& r : rpc) fo.rpc += (fo.rpc.empty() ? "" : ",") + r;
  std::vector<std::string> argv = FitParamsArgv(*engine, config, fo);
  argv.push_back("-v");
  // The engine's logger is asynchronous and can drop the tail of its verbose
  // log at exit; rerun until the compute lines (the last ones needed) arrive.
  CommandResult r;
  std::map<std::string, double> precise;  // device -> compute MiB from the log
  for (int attempt = 0; attempt < 6; ++attempt) {
    r = RunCommand(argv, 300);
    EXPECT_EQ(r.exit_code, 0) << ShellJoin(argv) << "\n"
                              << r.err.substr(r.err.size() > 2000 ? r.err.size() - 2000 : 0);
    if (r.exit_code != 0) return "";
    precise = LoggedComputeMiB(r.err, rpc);
    if (precise.size() == rpc.size() + 1) break;
  }
  auto parsed = ParseFitParamsOutput(r.out);
  EXPECT_TRUE(parsed.ok()) << r.out;
  if (!parsed.ok()) return "";
  std::vector<EngineDeviceSizes> sizes;
  for (const auto& d : *parsed)
    sizes.push_back(
        {d.name, d.model_bytes.count(), d.context_bytes.count(), d.compute_bytes.count()});
  auto check = ComparePlanWithEngine(model->gguf, model->arch, model->weights, config, sizes);
  EXPECT_TRUE(check.ok()) << (check.ok() ? "" : check.error().message());
  if (!check.ok()) return "";
  EXPECT_EQ(check->rows.size(), rpc.size() + 1) << r.out;
  for (const CheckRow& row : check->rows) {
    Row out{preset, row.side, row.device, label, devices, {}, {}, {}};
    std::optional<double> pc;
    if (auto it = precise.find(row.device); it != precise.end()) pc = it->second;
    out.model = CellOf(row.predicted_model, row.engine_model, row.model_ok, std::nullopt);
    out.context = CellOf(row.predicted_context, row.engine_context, row.context_ok, std::nullopt);
    out.compute = CellOf(row.predicted_compute, row.engine_compute, row.compute_ok, pc);
    const std::string where = fmt::format("{} {} {}", preset, row.device, label);
    EXPECT_TRUE(row.model_ok) << where << ": weights " << out.model.predicted_mib << " vs "
                              << row.engine_model / kMiB << " MiB";
    EXPECT_TRUE(row.context_ok) << where << ": context " << out.context.predicted_mib << " vs "
                                << row.engine_context / kMiB << " MiB";
    if (engine->version == kComputeRulesEngineVersion) {
      EXPECT_TRUE(row.compute_ok) << where << ": compute " << out.compute.predicted_mib << " vs "
                                  << row.engine_compute / kMiB << " MiB";
      EXPECT_LT(std::abs(out.compute.error), 0.15)
          << where << ": compute " << out.compute.predicted_mib << " vs " << out.compute.engine_mib
          << " MiB";
    } else {
      // Another version's compute buffers (0.4.0's are smaller, docs/engine.md):
      // outside the band only on the safe side, moetune's the larger.
      EXPECT_TRUE(row.compute_ok || row.predicted_compute > row.engine_compute)
          << where << " (" << engine->Describe() << "): compute " << out.compute.predicted_mib
          << " vs " << row.engine_compute / kMiB << " MiB";
    }
    m->Add(std::move(out));
  }
  return r.err;
}

// Runs the engine's dry run for `launch` (with one RPC server when `rpc`).
void CheckCase(const std::string& preset, const MatrixCase& launch, bool rpc) {
  Matrix* m = Matrix::Get();
  const ModelInfo* model = m->Model(preset);
  ASSERT_NE(model, nullptr) << "synth of " << preset << " failed";
  ASSERT_NE(m->Engine(), nullptr) << "llama.cpp not found: run scripts/setup-engine.sh";
  const std::vector<std::string> servers = rpc ? m->RpcEndpoints(1) : std::vector<std::string>{};
  ASSERT_EQ(servers.size(), rpc ? 1u : 0u) << "ggml-rpc-server did not start";
  CheckConfig(preset, ConfigOf(launch, CommandModelPath(*model)), servers, Describe(launch), 1);
}

MatrixCase Launch(const ModelInfo& m, int64_t ctx, int64_t ub, bool fa, int np) {
  MatrixCase c;
  c.moe = m.arch.is_moe() && m.weights.expert_total() > 0;
  c.placement.n_gpu_layers = static_cast<int>(m.weights.layers.size()) + 1;
  c.ctx.n_ctx = ctx;
  c.ctx.n_ubatch = ub;
  c.ctx.n_batch = std::max<int64_t>(ub, 2048);
  c.ctx.flash_attn = fa;
  c.ctx.n_seq = np;
  return c;
}

// Presets whose device split is checked: five in CI, every one in the full matrix.
std::vector<std::string> DeviceSplitPresets() {
  if (FullMatrix()) return Presets();
  return {"qwen3moe", "qwen35moe", "gpt-oss-20b", "deepseek2", "llama"};
}

class MemoryMatrix : public ::testing::TestWithParam<std::string> {};
class MemoryMatrixRpc : public ::testing::TestWithParam<std::string> {};

// The host side: with no device, the engine keeps everything in host memory.
TEST_P(MemoryMatrix, HostSizesMatchTheEngine) {
  const std::string preset = GetParam();
  const ModelInfo* m = Matrix::Get()->Model(preset);
  ASSERT_NE(m, nullptr);
  const bool grid =
      FullMatrix() || preset == "qwen3moe" || preset == "qwen35moe" || preset == "gpt-oss-20b";
  std::vector<int64_t> ctxs = {4096};
  std::vector<int64_t> ubs = {512};
  std::vector<bool> fas = {true};
  std::vector<int> nps = {1};
  if (grid) {
    ctxs = FullMatrix() ? std::vector<int64_t>{4096, 32768, 131072}
                        : std::vector<int64_t>{4096, 32768};
    ubs = {512, 2048};
    fas = {true, false};
    nps = {1, 4};
  }
  for (int64_t c : ctxs)
    for (int64_t u : ubs)
      for (bool fa : fas)
        for (int np : nps) CheckCase(preset, Launch(*m, c, u, fa, np), false);
  if (grid) {
    // Quantized cache, a batch below the micro-batch, a micro-batch beyond the context.
    MatrixCase q = Launch(*m, 32768, 512, true, 1);
    q.ctx.type_k = q.ctx.type_v = ggml_type::kQ8_0;
    CheckCase(preset, q, false);
    MatrixCase b = Launch(*m, 8192, 1024, true, 1);
    b.ctx.n_batch = 256;
    CheckCase(preset, b, false);
    MatrixCase tiny_ctx = Launch(*m, 512, 4096, true, 1);
    tiny_ctx.ctx.n_batch = 4096;
    CheckCase(preset, tiny_ctx, false);
    // Slots that do not divide the micro-batch (the reserve rounds the tokens up).
    CheckCase(preset, Launch(*m, 4000, 512, false, 3), false);
    CheckCase(preset, Launch(*m, 5000, 512, true, 7), false);
  }
}

// The device/host split, through a real second device (ggml-rpc-server).
TEST_P(MemoryMatrixRpc, DeviceSplitMatchesTheEngineThroughRpc) {
  const std::string preset = GetParam();
  const bool sampled = preset == "qwen3moe" || preset == "qwen35moe" || preset == "gpt-oss-20b" ||
                       preset == "deepseek2" || preset == "llama";
  if (!FullMatrix() && !sampled)
    GTEST_SKIP() << "device splits of " << preset << ": full matrix only";
  const ModelInfo* m = Matrix::Get()->Model(preset);
  ASSERT_NE(m, nullptr);
  const int n = static_cast<int>(m->weights.layers.size());
  const bool moe = m->arch.is_moe() && m->weights.expert_total() > 0;
  std::vector<bool> fas = FullMatrix() ? std::vector<bool>{true, false} : std::vector<bool>{true};
  for (bool fa : fas) {
    for (int k : {0, 1, n / 2, n}) {
      MatrixCase c = Launch(*m, 4096, 512, fa, 1);
      if (moe) {
        c.placement.n_gpu_layers = 99;
        c.placement.n_cpu_moe = k;
      } else {
        c.placement.n_gpu_layers = k + 1;  // the output head first, then the last k layers
      }
      CheckCase(preset, c, true);
    }
  }
  if (moe) {
    // A fine fill: --n-cpu-moe N-1 plus -ot keeping one expert tensor of layer N-1 on the CPU.
    MatrixCase c = Launch(*m, 4096, 512, true, 1);
    c.placement.n_gpu_layers = 99;
    c.placement.n_cpu_moe = n / 2 - 1;
    c.placement.override_layer = n / 2 - 1;
    c.placement.override_kinds = {"ffn_down_exps"};
    CheckCase(preset, c, true);
    // Four slots, one cache each, no flash attention.
    MatrixCase s = Launch(*m, 32768, 512, false, 4);
    s.placement.n_gpu_layers = 99;
    s.placement.n_cpu_moe = n / 2;
    CheckCase(preset, s, true);
  }
}

// Presets whose splits across two and three devices are checked: two MoE
// shapes and a dense one in CI, every preset in the full matrix.
std::vector<std::string> AcrossDevicesPresets() {
  if (FullMatrix()) return Presets();
  return {"qwen3moe", "gpt-oss-20b", "llama"};
}

class MemoryMatrixDevices : public ::testing::TestWithParam<std::string> {};

// `moetune plan --vram A,B[,C] --check --rpc ...` over two and three real
// ggml-rpc-servers: the printed command, read back, is the one the check ran,
// and llama.cpp's dry run of it agrees with moetune on every device and the
// host (weights and context 1%, compute 15%). Each device's budget is a share
// of the weights and cache plus 1.5 GiB (the plan's 1 GiB margin and the
// compute buffers): 60% of them in all keeps some layers' experts on the CPU
// (one -ot rule); 130% keeps everything on the devices, with no -ot, so
// llama.cpp runs the split with pipeline parallelism (model/compute_buffers.h).
TEST_P(MemoryMatrixDevices, EveryDeviceOfAPlannedSplitMatchesTheEngine) {
  const std::string preset = GetParam();
  Matrix* mx = Matrix::Get();
  const ModelInfo* m = mx->Model(preset);
  ASSERT_NE(m, nullptr) << "synth of " << preset << " failed";
  const EngineInfo* engine = mx->Engine();
  ASSERT_NE(engine, nullptr) << "llama.cpp not found: run scripts/setup-engine.sh";
  const bool reference = engine->version == kComputeRulesEngineVersion;
  const bool moe = m->arch.is_moe() && m->weights.expert_total() > 0;
  std::vector<std::vector<std::string>> shapes = {{"--ctx", "8192"}};
  if (FullMatrix()) shapes.push_back({"--ctx", "32768", "--parallel", "4", "--fa", "off"});
  for (const size_t nd : {size_t{2}, size_t{3}}) {
    const std::vector<std::string> servers = mx->RpcEndpoints(nd);
    ASSERT_EQ(servers.size(), nd) << "ggml-rpc-server did not start";
    for (const auto& shape : shapes) {
      ContextParams cp;
      cp.n_ctx = std::stoll(shape[1]);
      cp.n_seq = shape.size() > 2 ? 4 : 1;
      auto cache = ComputeContextMemory(m->arch, cp);
      ASSERT_TRUE(cache.ok());
      for (const int percent : moe ? std::vector<int>{60, 130} : std::vector<int>{130}) {
        const int64_t each =
            (m->weights.total + cache->total()) * percent / 100 / static_cast<int64_t>(nd) +
            1536 * kMiB;
        std::vector<std::string> argv = {MoetuneBinary(), "plan", m->path, "--vram",
                                         fmt::format("{}MiB", each / kMiB)};
        for (size_t d = 1; d < nd; ++d) argv.back() += fmt::format(",{}MiB", each / kMiB);
        argv.insert(argv.end(), shape.begin(), shape.end());
        argv.insert(argv.end(), {"--check", "--rpc", fmt::format("{}", fmt::join(servers, ",")),
                                 "--json", "--host-ram", "1TiB", "--llama-dir", engine->dir});
        const CommandResult r = RunCommand(argv, 300);
        const std::string what = fmt::format("{} on {} devices at {}%", preset, nd, percent);
        // Another engine version may reserve other compute buffers: exit 4
        // (CheckConfig then allows moetune's to be the larger only).
        ASSERT_TRUE(r.exit_code == 0 || (!reference && r.exit_code == 4))
            << what << ": exit " << r.exit_code << ": " << r.err << r.out.substr(0, 3000);
        const auto j = nlohmann::json::parse(r.out, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << r.out;
        EXPECT_TRUE(!reference || j["check"]["agrees"].get<bool>())
            << what << ": " << j["check"].dump(1);
        ASSERT_EQ(j["devices"].size(), nd) << what;
        size_t on_cpu = 0;
        for (const auto& d : j["devices"]) {
          EXPECT_GT(d["layers"].get<int>(), 0) << what << ": " << d.dump();
          on_cpu += d["cpu_expert_layers"].size();
        }
        EXPECT_EQ(on_cpu > 0, percent < 100) << what << ": " << j["devices"].dump();
        // The printed command, read back, is what plan --check gave the engine.
        const auto command = j["command_argv"].get<std::vector<std::string>>();
        const ParsedServerCommand parsed = ParseServerArgv(command);
        ASSERT_TRUE(parsed.invalid.empty() && parsed.not_understood.empty() && parsed.other.empty())
            << what;
        FitParamsOptions fo;
        fo.count_host_weights = true;
        EXPECT_EQ(FitParamsArgv(*engine, parsed.config, fo),
                  j["check"]["engine_command"].get<std::vector<std::string>>())
            << what;
        std::vector<std::string> flags;  // the memory-shaping flags, for the report
        for (size_t i = 3; i < command.size(); ++i) {
          if (command[i] == "--rpc")
            ++i;
          else
            flags.push_back(command[i]);
        }
        const std::string log =
            CheckConfig(preset, parsed.config, servers, ShellJoin(flags), static_cast<int>(nd));
        const bool overrides = std::find(command.begin(), command.end(), "-ot") != command.end();
        if (reference) {
          EXPECT_EQ(log.find("pipeline parallelism enabled") != std::string::npos, !overrides)
              << what << ": llama.cpp enables pipeline parallelism exactly without -ot";
        }
      }
    }
  }
}

std::string PresetName(const ::testing::TestParamInfo<std::string>& param_info) {
  std::string s = param_info.param;
  for (auto& ch : s) ch = ch == '-' ? '_' : ch;
  return s;
}

INSTANTIATE_TEST_SUITE_P(Presets, MemoryMatrix, ::testing::ValuesIn(Presets()), PresetName);
INSTANTIATE_TEST_SUITE_P(Presets, MemoryMatrixRpc, ::testing::ValuesIn(DeviceSplitPresets()),
                         PresetName);
INSTANTIATE_TEST_SUITE_P(Presets, MemoryMatrixDevices, ::testing::ValuesIn(AcrossDevicesPresets()),
                         PresetName);

}  // namespace
}  // namespace moetune::itest
