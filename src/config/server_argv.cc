#include "config/server_argv.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <limits>

#include "util/text.h"

namespace moetune {
namespace {

void Add(std::vector<FlagSetting>* out, FlagId id, std::string value = "") {
  out->push_back({id, std::move(value)});
}

std::string Joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ",") + i;
  return s;
}

void AddPlacementSettings(const Placement& p, std::vector<FlagSetting>* out) {
  if (p.n_gpu_layers >= 0) Add(out, FlagId::kGpuLayers, std::to_string(p.n_gpu_layers));
  if (p.WrittenNCpuMoe() >= 0) Add(out, FlagId::kNCpuMoe, std::to_string(p.WrittenNCpuMoe()));
  if (p.all_cpu_moe) Add(out, FlagId::kCpuMoe);
  if (const std::string ot = p.OverrideTensor(); !ot.empty()) Add(out, FlagId::kOverrideTensor, ot);
  if (!p.devices.empty()) {
    std::vector<std::string> names, layers;
    for (const auto& d : p.devices) {
      names.push_back(d.device);
      layers.push_back(std::to_string(d.layers));
    }
    Add(out, FlagId::kDevice, Joined(names));
    Add(out, FlagId::kTensorSplit, Joined(layers));
  }
}

template <typename T>
bool ToInt(std::string_view s, T lo, T hi, T* out) {
  T v{};
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool LooksLikeValue(const std::string& s) {
  if (s.empty() || s[0] != '-') return true;
  return s.size() > 1 && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
}

std::vector<std::string> SplitComma(const std::string& value) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= value.size();) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    out.push_back(value.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Sets the field of a flag of how the server runs (-fit, load mode, RPC,
// host, port, metrics) from `value`: false when the value does not parse,
// nullopt when `id` is not one of them.
std::optional<bool> ApplyServing(FlagId id, const std::string& value, ServerConfig* c) {
  switch (id) {
    case FlagId::kFit:
      if (value == "on" || value == "off") {
        c->fit = value == "on" ? Switch::kOn : Switch::kOff;
        return true;
      }
      return false;
    case FlagId::kLoadMode: {
      auto lm = ParseLoadMode(value);
      if (lm.ok()) c->load_mode = *lm;
      return lm.ok() && !value.empty();
    }
    case FlagId::kRpc:
      c->rpc.clear();
      for (auto& host : SplitComma(value)) {
        if (!host.empty()) c->rpc.push_back(std::move(host));
      }
      return true;
    case FlagId::kHost:
      c->host = value;
      return true;
    case FlagId::kPort:
      return ToInt(value, 1, 65535, &c->port);
    case FlagId::kMetrics:
      c->metrics = true;
      return true;
    default:
      return std::nullopt;
  }
}

// Sets the field of `flag` from `value`; false when the value does not parse.
bool Apply(const FlagSpec& flag, const std::string& value, ParsedServerCommand* cmd) {
  ServerConfig& c = cmd->config;
  Placement& p = c.placement;
  constexpr int kMaxInt = std::numeric_limits<int>::max();
  switch (flag.id) {
    case FlagId::kModel:
      c.model = value;
      return true;
    case FlagId::kGpuLayers:
      if (value == "auto") return p.n_gpu_layers = -1, true;
      if (value == "all") return p.n_gpu_layers = 999, true;
      return ToInt(value, -1, kMaxInt, &p.n_gpu_layers);
    case FlagId::kNCpuMoe:
      return ToInt(value, 0, kMaxInt, &p.n_cpu_moe);
    case FlagId::kCpuMoe:
      p.all_cpu_moe = true;
      return true;
    case FlagId::kOverrideTensor:
      return p.AddOverrideTensor(value).ok();
    case FlagId::kCtxSize:
      return ToInt<int64_t>(value, 0, int64_t{1} << 40, &c.ctx_size);
    case FlagId::kParallel: {
      // -1 is llama-server's "auto"; 0 slots is no server (ServerConfig::n_parallel).
      int n = 0;
      if (!ToInt(value, -1, kMaxInt, &n) || n == 0) return false;
      c.n_parallel = n;
      return true;
    }
    case FlagId::kKvUnified:
      c.kv_unified = Switch::kOn;
      return true;
    case FlagId::kNoKvUnified:
      c.kv_unified = Switch::kOff;
      return true;
    case FlagId::kUbatch:
      return ToInt(value, 1, kMaxInt, &c.n_ubatch);
    case FlagId::kBatch:
      return ToInt(value, 1, kMaxInt, &c.n_batch);
    case FlagId::kFlashAttn: {
      auto fa = ParseFlashAttn(value);
      if (fa.ok()) c.flash_attn = *fa;
      return fa.ok();
    }
    case FlagId::kCacheTypeK:
    case FlagId::kCacheTypeV: {
      auto t = GgmlTypeByName(value);
      if (!t) return false;
      (flag.id == FlagId::kCacheTypeK ? c.type_k : c.type_v) = t->id;
      return true;
    }
    case FlagId::kThreads:
      return ToInt(value, -1, kMaxInt, &c.threads);
    default:
      if (auto applied = ApplyServing(flag.id, value, &c)) return *applied;
      cmd->other.push_back({flag.id, value});
      return true;
  }
}

void MarkGiven(FlagId id, ParsedServerCommand* cmd) {
  if (!cmd->Given(id)) cmd->given.push_back(id);
}

// -dev and -ts as ServerArgv writes a split across devices (one name and one
// whole layer count per device) become the placement's devices; anything else
// stays with the other flags, as given.
void DevicesFrom(ParsedServerCommand* cmd) {
  const std::string* dev = cmd->Other(FlagId::kDevice);
  const std::string* ts = cmd->Other(FlagId::kTensorSplit);
  if (dev == nullptr || ts == nullptr) return;
  const auto names = SplitComma(*dev);
  const auto layers = SplitComma(*ts);
  if (names.size() != layers.size()) return;
  std::vector<DevicePlacement> devices;
  for (size_t i = 0; i < names.size(); ++i) {
    int n = 0;
    if (names[i].empty() || !ToInt(layers[i], 0, 1 << 20, &n)) return;
    devices.push_back({names[i], n});
  }
  cmd->config.placement.devices = std::move(devices);
  std::erase_if(cmd->other, [](const FlagSetting& s) {
    return s.flag == FlagId::kDevice || s.flag == FlagId::kTensorSplit;
  });
}

// Reading done: what the flags together say.
void Finish(ParsedServerCommand* cmd) {
  // --cpu-moe keeps every layer's experts in host memory: a count beside it says nothing more.
  if (cmd->config.placement.all_cpu_moe) cmd->config.placement.n_cpu_moe = -1;
  DevicesFrom(cmd);
}

// A value that llama.cpp reads as "on" for a switch given in the environment.
bool EnvSwitchOn(std::string_view v) {
  return v == "1" || v == "true" || v == "on" || v == "enabled";
}

}  // namespace

std::vector<FlagSetting> ConfigSettings(const ServerConfig& c) {
  std::vector<FlagSetting> out;
  if (!c.model.empty()) Add(&out, FlagId::kModel, c.model);
  AddPlacementSettings(c.placement, &out);
  if (c.ctx_size > 0) Add(&out, FlagId::kCtxSize, std::to_string(c.ctx_size));
  if (c.n_parallel > 0) Add(&out, FlagId::kParallel, std::to_string(c.n_parallel));
  if (c.kv_unified == Switch::kOn) Add(&out, FlagId::kKvUnified);
  if (c.kv_unified == Switch::kOff) Add(&out, FlagId::kNoKvUnified);
  Add(&out, FlagId::kUbatch, std::to_string(c.n_ubatch));
  Add(&out, FlagId::kBatch, std::to_string(c.n_batch));
  if (c.flash_attn != FlashAttn::kDefault)
    Add(&out, FlagId::kFlashAttn, FlashAttnName(c.flash_attn));
  if (c.type_k != ggml_type::kF16) Add(&out, FlagId::kCacheTypeK, GgmlTypeName(c.type_k));
  if (c.type_v != ggml_type::kF16) Add(&out, FlagId::kCacheTypeV, GgmlTypeName(c.type_v));
  if (c.threads != 0) Add(&out, FlagId::kThreads, std::to_string(c.threads));
  if (c.fit != Switch::kDefault) Add(&out, FlagId::kFit, SwitchName(c.fit));
  if (c.load_mode != LoadMode::kDefault) Add(&out, FlagId::kLoadMode, LoadModeName(c.load_mode));
  if (!c.rpc.empty()) Add(&out, FlagId::kRpc, Joined(c.rpc));
  if (!c.host.empty()) Add(&out, FlagId::kHost, c.host);
  if (c.port > 0) Add(&out, FlagId::kPort, std::to_string(c.port));
  if (c.metrics) Add(&out, FlagId::kMetrics);
  // The vocabulary's order (FlagId follows it).
  std::stable_sort(out.begin(), out.end(),
                   [](const FlagSetting& a, const FlagSetting& b) { return a.flag < b.flag; });
  return out;
}

std::vector<FlagSetting> PlacementSettings(const Placement& placement) {
  std::vector<FlagSetting> out;
  AddPlacementSettings(placement, &out);
  return out;
}

std::vector<std::string> SettingsArgv(const std::vector<FlagSetting>& settings, FlagTool tool) {
  std::vector<std::string> out;
  for (const auto& s : settings) {
    const FlagSpec& f = Flag(s.flag);
    out.emplace_back(f.SpellingFor(tool));
    if (f.takes_value()) out.push_back(s.value);
  }
  return out;
}

std::vector<std::string> ServerArgv(const ServerConfig& config, const std::string& program) {
  std::vector<std::string> a = {program};
  const auto words = SettingsArgv(ConfigSettings(config));
  a.insert(a.end(), words.begin(), words.end());
  return a;
}

bool ParsedServerCommand::Given(FlagId id) const {
  return std::find(given.begin(), given.end(), id) != given.end();
}

const std::string* ParsedServerCommand::Other(FlagId id) const {
  for (auto it = other.rbegin(); it != other.rend(); ++it) {
    if (it->flag == id) return &it->value;
  }
  return nullptr;
}

ServerConfig UnsetServerConfig() {
  ServerConfig c;
  c.placement.n_gpu_layers = -1;
  c.placement.n_cpu_moe = -1;
  return c;
}

ParsedServerCommand ParseServerArgv(const std::vector<std::string>& argv) {
  ParsedServerCommand cmd;
  cmd.config = UnsetServerConfig();
  if (argv.empty()) return cmd;
  std::size_t first = 1;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string name = std::filesystem::path(argv[i]).filename().string();
    if (name.rfind("llama-server", 0) == 0) {
      first = i + 1;
      break;
    }
  }
  cmd.program = argv[first - 1];
  cmd.launcher.assign(argv.begin(), argv.begin() + static_cast<std::ptrdiff_t>(first - 1));
  cmd.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(first), argv.end());
  const auto& args = cmd.args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_next = i + 1 < args.size();
    const FlagSpec* f = FindFlag(a);
    if (f == nullptr) {
      cmd.not_understood.push_back(a);
      // Unknown flag: its value, when one follows, goes with it.
      if (a.size() > 1 && a[0] == '-' && has_next && LooksLikeValue(args[i + 1]))
        cmd.not_understood.push_back(args[++i]);
      continue;
    }
    std::string value;
    if (f->id == FlagId::kFlashAttn) {
      // A value in current builds (on|off|auto), a plain switch in older ones.
      value = has_next && LooksLikeValue(args[i + 1]) ? args[++i] : "on";
    } else if (f->takes_value()) {
      if (!has_next) {
        cmd.invalid.push_back({f->id, ""});
        continue;
      }
      value = args[++i];
    }
    MarkGiven(f->id, &cmd);
    if (!Apply(*f, value, &cmd)) cmd.invalid.push_back({f->id, value});
  }
  Finish(&cmd);
  return cmd;
}

void ApplyLlamaEnv(const std::vector<std::pair<std::string, std::string>>& env,
                   ParsedServerCommand* cmd) {
  for (const auto& [name, value] : env) {
    const FlagSpec* f = FindFlagByEnv(name);
    if (f == nullptr || cmd->Given(f->id)) continue;
    // LLAMA_ARG_KV_UNIFIED=false says -no-kvu.
    const FlagSpec* target = f;
    if (!f->takes_value()) {
      if (!EnvSwitchOn(value)) {
        if (f->id != FlagId::kKvUnified) continue;
        target = &Flag(FlagId::kNoKvUnified);
      }
    }
    MarkGiven(f->id, cmd);
    if (!Apply(*target, target->takes_value() ? value : "", cmd))
      cmd->invalid.push_back({f->id, value});
  }
  Finish(cmd);
}

std::string ShellJoin(const std::vector<std::string>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (i) out += ' ';
    const bool plain =
        !s.empty() &&
        s.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
            std::string::npos;
    if (plain) {
      out += s;
      continue;
    }
    out += '\'';
    for (char c : s) {
      if (c == '\'')
        out += "'\\''";
      else
        out += c;
    }
    out += '\'';
  }
  return out;
}

}  // namespace moetune
