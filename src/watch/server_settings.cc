#include "watch/server_settings.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "model/arch.h"

namespace moetune {
namespace {

std::string ModelName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// The settings as the one writer writes them, with the vocabulary's other
// flags given on the command line (the last of a repeated flag counts).
std::map<std::string, std::string> Written(const ServerSettings& s) {
  std::map<std::string, std::string> out;
  for (const auto& w : ConfigSettings(s.config)) {
    const FlagSpec& f = Flag(w.flag);
    out[f.key] = f.takes_value() ? w.value : "on";
  }
  for (const auto& o : s.other) {
    const FlagSpec& f = Flag(o.flag);
    out[f.key] = f.takes_value() ? o.value : "on";
  }
  for (const auto& i : s.invalid) out[Flag(i.flag).key] = i.value;
  // -ub and -b are always written; absent, they are llama.cpp's defaults too.
  return out;
}

}  // namespace

std::optional<int> ServerSettings::NCpuMoe() const {
  const Placement& p = config.placement;
  // A count of layers: negative or beyond any model is no N to build on.
  if (p.all_cpu_moe || p.n_cpu_moe < 0 || p.n_cpu_moe > kMaxLayers) return std::nullopt;
  return p.n_cpu_moe;
}

std::optional<int64_t> ServerSettings::CtxPerSlot() const {
  if (ctx_per_slot) return ctx_per_slot;
  if (config.ctx_size <= 0 || config.kv_unified == Switch::kOn) return std::nullopt;
  return config.ctx_size / std::max(1, config.n_parallel);
}

ServerSettings SettingsFromArgv(const std::vector<std::string>& argv) {
  return ServerSettings(ParseServerArgv(argv));
}

std::string ServerSettings::NCpuMoeAsGiven() const {
  for (const FlagSetting& f : invalid)
    if (f.flag == FlagId::kNCpuMoe) return f.value;
  if (!Given(FlagId::kNCpuMoe) || config.placement.n_cpu_moe < 0) return "";
  return std::to_string(config.placement.n_cpu_moe);
}

std::map<std::string, std::string> GivenSettings(const ServerSettings& s) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : Written(s)) {
    const FlagSpec* f = FindFlagByKey(key);
    if (f != nullptr && s.Given(f->id)) out[key] = value;
  }
  return out;
}

std::vector<SettingDifference> CompareSettings(const ServerSettings& expected,
                                               const ServerSettings& actual) {
  const auto e = Written(expected);
  const auto a = Written(actual);
  std::vector<std::string> keys;
  keys.reserve(e.size() + a.size());
  for (const auto& [k, v] : e) keys.push_back(k);
  for (const auto& [k, v] : a) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<SettingDifference> out;
  for (const auto& k : keys) {
    const FlagSpec* f = FindFlagByKey(k);
    if (f == nullptr || !f->shapes) continue;
    auto ei = e.find(k);
    auto ai = a.find(k);
    const std::string ev = ei == e.end() ? "(default)" : ei->second;
    const std::string av = ai == a.end() ? "(default)" : ai->second;
    if (f->id == FlagId::kModel && ei != e.end() && ai != a.end() && ModelName(ev) == ModelName(av))
      continue;
    if (ev != av) out.push_back({k, ev, av});
  }
  return out;
}

std::string SettingFlagName(const std::string& key) {
  if (key == "ctx_per_slot") return "context per slot (/props)";
  const FlagSpec* f = FindFlagByKey(key);
  return f == nullptr ? key : f->spelling;
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
    const FlagSpec* f = FindFlag(a);
    if (f != nullptr && f->id == FlagId::kNCpuMoe) {
      if (!replaced) out.insert(out.end(), {a, std::to_string(n)});
      replaced = true;
      ++i;  // its value
      continue;
    }
    if (f != nullptr && f->id == FlagId::kCpuMoe) continue;
    out.push_back(a);
  }
  if (!replaced) {
    out.insert(out.end(), {Flag(FlagId::kNCpuMoe).spelling, std::to_string(n)});
  }
  return out;
}

}  // namespace moetune
