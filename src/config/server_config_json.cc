#include "config/server_config_json.h"

#include <limits>

namespace moetune {
namespace {

using nlohmann::json;

constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
// Far beyond any model (the largest have a few hundred layers) and any
// context, yet small enough that sums of them cannot overflow.
constexpr int64_t kMaxLayers = 1 << 20;
constexpr int64_t kMaxContext = int64_t{1} << 40;
constexpr std::size_t kMaxListItems = 4096;

// The -ot value of what a placement holds besides the experts of the last
// layers or of each device's first layers (which `cpu_experts` and `n_layer` say).
std::string OverridesWithoutLast(const Placement& p) {
  Placement q = p;
  q.cpu_experts = CpuExpertsFrom::kFirst;
  return q.OverrideTensor();
}

Switch SwitchFrom(JsonFields& f, const char* key, Switch fallback) {
  const std::string v = f.String(key, SwitchName(fallback));
  if (v.empty()) return Switch::kDefault;
  if (v == "on") return Switch::kOn;
  if (v == "off") return Switch::kOff;
  f.Invalid(key, "\"on\", \"off\" or \"\"");
  return fallback;
}

uint32_t KvTypeFrom(JsonFields& f, const char* key, uint32_t fallback) {
  const std::string v = f.String(key, GgmlTypeName(fallback));
  if (auto t = GgmlTypeByName(v)) return t->id;
  f.Invalid(key, "a ggml type name (f16, q8_0, ...)");
  return fallback;
}

void PlacementFrom(JsonFields& f, Placement* p) {
  p->n_gpu_layers = static_cast<int>(f.Int("n_gpu_layers", -1, kMaxLayers, p->n_gpu_layers));
  p->n_cpu_moe = static_cast<int>(f.Int("n_cpu_moe", -1, kMaxLayers, p->n_cpu_moe));
  p->all_cpu_moe = f.Bool("cpu_moe", p->all_cpu_moe);
  const std::string from = f.String("cpu_experts", "first");
  if (from == "last" || from == "per_device") {
    p->cpu_experts = from == "last" ? CpuExpertsFrom::kLast : CpuExpertsFrom::kPerDevice;
    p->n_layer = static_cast<int>(f.Int("n_layer", 1, kMaxLayers));
  } else if (from != "first") {
    f.Invalid("cpu_experts", "\"first\", \"last\" or \"per_device\"");
  }
  if (f.Has("override_tensor")) {
    const std::string text = f.String("override_tensor", "");
    if (!p->SetOverrideTensor(text).ok())
      f.Invalid("override_tensor", "-ot rules (pattern=BUFFER,...)");
  }
  if (const json* devices = f.OptionalArray("devices")) {
    p->devices.clear();
    if (devices->size() > kMaxListItems) f.Invalid("devices", "at most 4096 devices");
    for (std::size_t i = 0; i < devices->size() && p->devices.size() < kMaxListItems; ++i) {
      JsonFields d((*devices)[i], f.Path("devices") + "[" + std::to_string(i) + "]");
      p->devices.push_back({d.String("device"), static_cast<int>(d.Int("layers", 0, kMaxLayers))});
      f.Merge(d);
    }
  }
}

}  // namespace

void AddServerConfigJson(const ServerConfig& c, json* o) {
  const Placement& p = c.placement;
  json& j = *o;
  j["model"] = c.model;
  j["n_gpu_layers"] = p.n_gpu_layers;
  j["n_cpu_moe"] = p.n_cpu_moe;
  j["override_tensor"] = OverridesWithoutLast(p);
  j["threads"] = c.threads;
  j["n_ubatch"] = c.n_ubatch;
  j["n_batch"] = c.n_batch;
  j["flash_attn"] = FlashAttnName(c.flash_attn);
  j["type_k"] = GgmlTypeName(c.type_k);
  j["type_v"] = GgmlTypeName(c.type_v);
  j["load_mode"] = LoadModeName(c.load_mode);
  j["ctx_size"] = c.ctx_size;
  j["n_parallel"] = c.n_parallel;
  j["kv_unified"] = SwitchName(c.kv_unified);
  j["fit"] = SwitchName(c.fit);
  j["rpc"] = c.rpc;
  if (p.all_cpu_moe) j["cpu_moe"] = true;
  if (p.cpu_experts != CpuExpertsFrom::kFirst) {
    j["cpu_experts"] = p.cpu_experts == CpuExpertsFrom::kLast ? "last" : "per_device";
    j["n_layer"] = p.n_layer;
  }
  if (!p.devices.empty()) {
    json d = json::array();
    for (const auto& x : p.devices) d.push_back({{"device", x.device}, {"layers", x.layers}});
    j["devices"] = d;
  }
  if (!c.host.empty()) j["host"] = c.host;
  if (c.port > 0) j["port"] = c.port;
  if (c.metrics) j["metrics"] = true;
}

json ServerConfigJson(const ServerConfig& config) {
  json j = json::object();
  AddServerConfigJson(config, &j);
  return j;
}

ServerConfig ServerConfigFromJson(JsonFields& f, const ServerConfig& base) {
  ServerConfig c = base;
  c.model = f.String("model", c.model);
  PlacementFrom(f, &c.placement);
  c.threads = static_cast<int>(f.Int("threads", -1, kMaxInt, c.threads));
  c.n_ubatch = static_cast<int>(f.Int("n_ubatch", 1, kMaxInt, c.n_ubatch));
  c.n_batch = static_cast<int>(f.Int("n_batch", 1, kMaxInt, c.n_batch));
  auto fa = ParseFlashAttn(f.String("flash_attn", FlashAttnName(c.flash_attn)));
  if (fa.ok()) {
    c.flash_attn = *fa;
  } else {
    f.Invalid("flash_attn", "\"on\", \"off\", \"auto\" or \"\"");
  }
  c.type_k = KvTypeFrom(f, "type_k", c.type_k);
  c.type_v = KvTypeFrom(f, "type_v", c.type_v);
  auto lm = ParseLoadMode(f.String("load_mode", LoadModeName(c.load_mode)));
  if (lm.ok()) {
    c.load_mode = *lm;
  } else {
    f.Invalid("load_mode",
              "a llama.cpp load mode (auto, none, mmap, mlock, mmap+mlock, dio) or \"\"");
  }
  c.ctx_size = f.Int("ctx_size", 0, kMaxContext, c.ctx_size);
  c.n_parallel = static_cast<int>(f.Int("n_parallel", -1, kMaxInt, c.n_parallel));
  if (c.n_parallel == 0) f.Invalid("n_parallel", "-1 (llama-server's auto) or at least 1 slot");
  c.kv_unified = SwitchFrom(f, "kv_unified", c.kv_unified);
  c.fit = SwitchFrom(f, "fit", c.fit);
  if (f.Has("rpc")) c.rpc = f.Strings("rpc");
  if (c.rpc.size() > kMaxListItems) f.Invalid("rpc", "at most 4096 hosts");
  c.host = f.String("host", c.host);
  c.port = static_cast<int>(f.Int("port", 0, 65535, c.port));
  c.metrics = f.Bool("metrics", c.metrics);
  return c;
}

Result<ServerConfig> ServerConfigFromJson(const json& object, const std::string& where,
                                          const ServerConfig& base) {
  JsonFields f(object, where);
  ServerConfig c = ServerConfigFromJson(f, base);
  if (!f.ok()) return f.error();
  return c;
}

}  // namespace moetune
