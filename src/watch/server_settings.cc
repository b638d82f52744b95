#include "watch/server_settings.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

namespace moetune {
namespace {

struct Flag {
  const char* key;
  bool takes_value;
  std::vector<const char*> names;
  // Decides speed or memory: compared between tuned and running settings.
  bool compared;
};

// Aliases as llama.cpp's common/arg.cpp defines them (checked against the
// installed llama-server --help).
const std::vector<Flag>& Flags() {
  static const std::vector<Flag> kFlags = {
      {"model", true, {"-m", "--model"}, true},
      {"n_gpu_layers", true, {"-ngl", "--gpu-layers", "--n-gpu-layers"}, true},
      {"n_cpu_moe", true, {"-ncmoe", "--n-cpu-moe"}, true},
      {"cpu_moe", false, {"-cmoe", "--cpu-moe"}, true},
      {"ctx_size", true, {"-c", "--ctx-size"}, true},
      {"n_batch", true, {"-b", "--batch-size"}, true},
      {"n_ubatch", true, {"-ub", "--ubatch-size"}, true},
      {"type_k", true, {"-ctk", "--cache-type-k"}, true},
      {"type_v", true, {"-ctv", "--cache-type-v"}, true},
      {"override_tensor", true, {"-ot", "--override-tensor"}, true},
      {"n_parallel", true, {"-np", "--parallel"}, true},
      {"threads", true, {"-t", "--threads"}, true},
      {"threads_batch", true, {"-tb", "--threads-batch"}, true},
      {"fit", true, {"-fit", "--fit"}, true},
      {"split_mode", true, {"-sm", "--split-mode"}, true},
      {"tensor_split", true, {"-ts", "--tensor-split"}, true},
      {"main_gpu", true, {"-mg", "--main-gpu"}, true},
      {"device", true, {"-dev", "--device"}, true},
      {"rpc", true, {"--rpc"}, true},
      {"kv_unified", false, {"-kvu", "--kv-unified"}, true},
      {"no_kv_unified", false, {"-no-kvu", "--no-kv-unified"}, true},
      {"no_mmap", false, {"--no-mmap"}, true},
      {"mlock", false, {"--mlock"}, true},
      // 0.7.0 replaced --no-mmap and --mlock by -lm (0.4.0 has both).
      {"load_mode", true, {"-lm", "--load-mode"}, true},
      {"no_op_offload", false, {"--no-op-offload"}, true},
      {"host", true, {"--host"}, false},
      {"port", true, {"--port"}, false},
      {"metrics", false, {"--metrics"}, false},
      {"log_file", true, {"--log-file"}, false},
      {"alias", true, {"-a", "--alias"}, false},
      {"api_key", true, {"--api-key"}, false},
  };
  return kFlags;
}

// LLAMA_ARG_* twins of the compared flags (llama-server --help, "env:").
const std::vector<std::pair<const char*, const char*>>& EnvKeys() {
  static const std::vector<std::pair<const char*, const char*>> kEnv = {
      {"LLAMA_ARG_MODEL", "model"},
      {"LLAMA_ARG_N_GPU_LAYERS", "n_gpu_layers"},
      {"LLAMA_ARG_N_CPU_MOE", "n_cpu_moe"},
      {"LLAMA_ARG_CPU_MOE", "cpu_moe"},
      {"LLAMA_ARG_CTX_SIZE", "ctx_size"},
      {"LLAMA_ARG_BATCH", "n_batch"},
      {"LLAMA_ARG_UBATCH", "n_ubatch"},
      {"LLAMA_ARG_CACHE_TYPE_K", "type_k"},
      {"LLAMA_ARG_CACHE_TYPE_V", "type_v"},
      {"LLAMA_ARG_OVERRIDE_TENSOR", "override_tensor"},
      {"LLAMA_ARG_N_PARALLEL", "n_parallel"},
      {"LLAMA_ARG_THREADS", "threads"},
      {"LLAMA_ARG_FIT", "fit"},
      {"LLAMA_ARG_FLASH_ATTN", "flash_attn"},
      {"LLAMA_ARG_KV_UNIFIED", "kv_unified"},
      {"LLAMA_ARG_LOAD_MODE", "load_mode"},
  };
  return kEnv;
}

const Flag* FindFlag(const std::string& arg) {
  for (const auto& f : Flags()) {
    for (const char* n : f.names) {
      if (arg == n) return &f;
    }
  }
  return nullptr;
}

bool IsFlashAttn(const std::string& a) { return a == "-fa" || a == "--flash-attn"; }

bool LooksLikeValue(const std::string& s) {
  if (s.empty()) return true;
  if (s[0] != '-') return true;
  return s.size() > 1 && (std::isdigit(static_cast<unsigned char>(s[1])) || s[1] == '.');
}

std::optional<int> ToInt(const std::string& s) {
  int v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

bool IsCompared(const std::string& key) {
  if (key == "flash_attn") return true;
  for (const auto& f : Flags()) {
    if (key == f.key) return f.compared;
  }
  return false;
}

std::string ModelName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

std::optional<std::string> ServerSettings::Get(const std::string& key) const {
  auto it = values.find(key);
  return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::optional<int> ServerSettings::NCpuMoe() const {
  auto v = Get("n_cpu_moe");
  return v ? ToInt(*v) : std::nullopt;
}

int ServerSettings::NUbatch() const {
  auto v = Get("n_ubatch");
  auto n = v ? ToInt(*v) : std::nullopt;
  return n && *n > 0 ? *n : 512;
}

ServerSettings SettingsFromArgv(const std::vector<std::string>& argv) {
  ServerSettings s;
  std::size_t first = 1;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string name = std::filesystem::path(argv[i]).filename().string();
    if (name.rfind("llama-server", 0) == 0) {
      first = i + 1;
      break;
    }
  }
  if (argv.empty()) return s;
  s.program = argv[std::min(first, argv.size()) - 1];
  s.launcher.assign(argv.begin(),
                    argv.begin() + static_cast<std::ptrdiff_t>(std::min(first, argv.size()) - 1));
  s.args.assign(argv.begin() + static_cast<std::ptrdiff_t>(std::min(first, argv.size())),
                argv.end());
  for (std::size_t i = 0; i < s.args.size(); ++i) {
    const std::string& a = s.args[i];
    const bool has_next = i + 1 < s.args.size();
    if (IsFlashAttn(a)) {
      // A value in current builds (on|off|auto), a plain switch in older ones.
      if (has_next && LooksLikeValue(s.args[i + 1])) {
        s.values["flash_attn"] = s.args[++i];
      } else {
        s.values["flash_attn"] = "on";
      }
      continue;
    }
    const Flag* f = FindFlag(a);
    if (f == nullptr) {
      // Unknown flag: skip its value when one follows.
      if (a.size() > 1 && a[0] == '-' && has_next && LooksLikeValue(s.args[i + 1])) ++i;
      continue;
    }
    if (!f->takes_value) {
      s.values[f->key] = "on";
      if (std::string(f->key) == "cpu_moe") s.values.erase("n_cpu_moe");
      continue;
    }
    if (!has_next) continue;
    const std::string& v = s.args[++i];
    if (std::string(f->key) == "override_tensor" && s.values.count("override_tensor")) {
      s.values["override_tensor"] += "," + v;
    } else {
      s.values[f->key] = v;
    }
  }
  return s;
}

void ApplyLlamaEnv(const std::vector<std::pair<std::string, std::string>>& env,
                   ServerSettings* settings) {
  for (const auto& [name, value] : env) {
    for (const auto& [var, key] : EnvKeys()) {
      if (name == var && !settings->values.count(key)) settings->values[key] = value;
    }
  }
}

std::vector<SettingDifference> CompareSettings(const ServerSettings& expected,
                                               const ServerSettings& actual) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : expected.values) keys.push_back(k);
  for (const auto& [k, v] : actual.values) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<SettingDifference> out;
  for (const auto& k : keys) {
    if (!IsCompared(k)) continue;
    std::string e = expected.Get(k).value_or("(default)");
    std::string a = actual.Get(k).value_or("(default)");
    if (k == "model" && e != "(default)" && a != "(default)" && ModelName(e) == ModelName(a))
      continue;
    if (e != a) out.push_back({k, e, a});
  }
  return out;
}

std::vector<std::string> ServerSettings::Command() const {
  std::vector<std::string> c = launcher;
  c.push_back(program);
  c.insert(c.end(), args.begin(), args.end());
  return c;
}

std::vector<std::string> WithNCpuMoe(const ServerSettings& settings, int n) {
  std::vector<std::string> out = settings.launcher;
  out.push_back(settings.program);
  bool replaced = false;
  for (std::size_t i = 0; i < settings.args.size(); ++i) {
    const std::string& a = settings.args[i];
    const Flag* f = FindFlag(a);
    if (f != nullptr && std::string(f->key) == "n_cpu_moe") {
      if (!replaced) out.insert(out.end(), {a, std::to_string(n)});
      replaced = true;
      ++i;  // its value
      continue;
    }
    if (f != nullptr && std::string(f->key) == "cpu_moe") continue;
    out.push_back(a);
  }
  if (!replaced) out.insert(out.end(), {"--n-cpu-moe", std::to_string(n)});
  return out;
}

}  // namespace moetune
