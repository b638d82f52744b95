#include "watch/session.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/placement.h"
#include "util/units.h"

namespace moetune {
namespace {

std::string FlagName(const std::string& key) {
  static const std::map<std::string, std::string> kNames = {
      {"model", "-m"},
      {"n_gpu_layers", "-ngl"},
      {"n_cpu_moe", "--n-cpu-moe"},
      {"cpu_moe", "--cpu-moe"},
      {"ctx_size", "-c"},
      {"n_batch", "-b"},
      {"n_ubatch", "-ub"},
      {"type_k", "-ctk"},
      {"type_v", "-ctv"},
      {"flash_attn", "-fa"},
      {"override_tensor", "-ot"},
      {"n_parallel", "-np"},
      {"threads", "-t"},
      {"threads_batch", "-tb"},
      {"fit", "-fit"},
      {"kv_unified", "-kvu"},
      {"no_mmap", "--no-mmap"},
      {"mlock", "--mlock"},
      {"load_mode", "-lm"},
      {"ctx_per_slot", "context per slot (/props)"}};
  auto it = kNames.find(key);
  return it == kNames.end() ? key : it->second;
}

}  // namespace

WatchSession::WatchSession(SessionOptions options) : options_(std::move(options)) {
  reference_ = options_.expected;
  const int ub = reference_ ? reference_->NUbatch() : 512;
  overflow_ = std::make_unique<OverflowDetector>(options_.baseline, ub, options_.overflow);
  faults_ = PageFaultDetector(options_.faults);
  gpu_ = GpuMemoryDetector(options_.gpu);
}

void WatchSession::Record(std::vector<AlarmEvent>* events, bool raised, Alarm alarm) {
  if (raised) verdict_.raised.push_back(alarm);
  events->push_back({raised, std::move(alarm)});
}

std::vector<AlarmEvent> WatchSession::SetServerSettings(const ServerSettings& actual, double time_s,
                                                        bool restarted) {
  std::vector<AlarmEvent> events;
  running_ = actual;
  if (!overflow_fed_) {
    overflow_ =
        std::make_unique<OverflowDetector>(options_.baseline, actual.NUbatch(), options_.overflow);
  }
  if (!reference_) {
    reference_ = actual;
    return events;
  }
  const auto diff = CompareSettings(*reference_, actual);
  UpdateSettingsAlarm(diff, time_s, restarted, &events);
  return events;
}

void WatchSession::UpdateSettingsAlarm(const std::vector<SettingDifference>& diff, double time_s,
                                       bool restarted, std::vector<AlarmEvent>* events) {
  if (!diff.empty() && !settings_alarm_) {
    settings_alarm_ = SettingsAlarm(diff, time_s);
    if (restarted) settings_alarm_->title = "the server restarted with " + settings_alarm_->title;
    Record(events, true, *settings_alarm_);
  } else if (diff.empty() && settings_alarm_) {
    Record(events, false, *settings_alarm_);
    settings_alarm_.reset();
  }
}

std::vector<AlarmEvent> WatchSession::SetServerProps(const ServerProps& props, double time_s,
                                                     bool restarted) {
  // What /props reveals, in the same terms as a command line.
  ServerSettings s;
  if (!props.model_path.empty()) s.values["model"] = props.model_path;
  if (props.total_slots > 0) s.values["n_parallel"] = std::to_string(props.total_slots);
  if (props.n_ctx_per_slot > 0) s.values["ctx_per_slot"] = std::to_string(props.n_ctx_per_slot);
  if (reference_ && !reference_->values.count("ctx_per_slot")) {
    // Derive the tuned context per slot: -c / -np unless the cache is unified.
    ServerSettings& r = *reference_;
    const auto c = r.Get("ctx_size");
    const int np = std::max(1, std::atoi(r.Get("n_parallel").value_or("1").c_str()));
    if (c && !r.values.count("kv_unified"))
      r.values["ctx_per_slot"] = std::to_string(std::atoll(c->c_str()) / np);
  }
  std::vector<AlarmEvent> events;
  if (!reference_) {
    reference_ = s;
    return events;
  }
  // Only the keys /props can tell are compared.
  ServerSettings expected;
  for (const char* k : {"model", "n_parallel", "ctx_per_slot"}) {
    if (auto v = reference_->Get(k); v && s.values.count(k)) expected.values[k] = *v;
  }
  ServerSettings actual;
  for (const auto& [k, v] : expected.values) actual.values[k] = s.values[k];
  auto diff = CompareSettings(expected, actual);
  for (const auto& [k, v] : expected.values) {
    if (k == "ctx_per_slot" && v != actual.values[k]) diff.push_back({k, v, actual.values[k]});
  }
  UpdateSettingsAlarm(diff, time_s, restarted, &events);
  return events;
}

std::vector<AlarmEvent> WatchSession::AddObservation(const Observation& o, OverflowCheck* check) {
  std::vector<AlarmEvent> events;
  overflow_fed_ = true;
  const OverflowCheck c = overflow_->Add(o);
  if (check != nullptr) *check = c;
  if (overflow_->raised_now()) {
    overflow_alarm_ = OverflowAlarm(o.time_s);
    Record(&events, true, *overflow_alarm_);
  } else if (overflow_->active() && overflow_alarm_) {
    const double since = overflow_alarm_->since_s;
    overflow_alarm_ = OverflowAlarm(since);  // fresh evidence, same start
  } else if (overflow_->cleared_now() && overflow_alarm_) {
    Record(&events, false, *overflow_alarm_);
    overflow_alarm_.reset();
  }
  return events;
}

std::vector<AlarmEvent> WatchSession::AddFaults(const FaultSample& s) {
  std::vector<AlarmEvent> events;
  faults_.Add(s);
  if (faults_.raised_now()) {
    fault_alarm_ = FaultAlarm(s.time_s);
    Record(&events, true, *fault_alarm_);
  } else if (faults_.cleared_now() && fault_alarm_) {
    Record(&events, false, *fault_alarm_);
    fault_alarm_.reset();
  }
  return events;
}

std::vector<AlarmEvent> WatchSession::AddGpuScan(const std::vector<GpuInfo>& gpus,
                                                 const std::set<uint32_t>& own, double time_s) {
  std::vector<AlarmEvent> events;
  gpu_.Add(gpus, own);
  if (gpu_.raised_now()) {
    gpu_alarm_ = GpuAlarm(time_s);
    Record(&events, true, *gpu_alarm_);
  } else if (gpu_.cleared_now() && gpu_alarm_) {
    Record(&events, false, *gpu_alarm_);
    gpu_alarm_.reset();
  }
  return events;
}

void WatchSession::Rebase(std::shared_ptr<const Baseline> baseline,
                          const ServerSettings& settings) {
  options_.baseline = std::move(baseline);
  reference_ = settings;
  running_ = settings;
  overflow_ =
      std::make_unique<OverflowDetector>(options_.baseline, settings.NUbatch(), options_.overflow);
  overflow_fed_ = false;
  overflow_alarm_.reset();
  settings_alarm_.reset();
}

std::vector<Alarm> WatchSession::ActiveAlarms() const {
  std::vector<Alarm> out;
  for (const auto* a : {&overflow_alarm_, &fault_alarm_, &gpu_alarm_, &settings_alarm_}) {
    if (*a) out.push_back(**a);
  }
  return out;
}

Alarm WatchSession::OverflowAlarm(double time_s) const {
  Alarm a;
  a.kind = AlarmKind::kOverflow;
  a.since_s = time_s;
  const auto& ev = overflow_->evidence();
  const OverflowEvidence& last = ev.back();
  a.title = fmt::format(
      "GPU overflow: prefill at depth {:.0f} runs at x{:.2f} of normal while decode is x{:.2f}",
      last.depth, last.prefill_ratio, last.decode_ratio);
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : ev) {
    a.evidence.push_back(fmt::format(
        "t={:.0f}s depth {:.0f}: prefill {} ({:.0f} tokens), expected at least {} -> x{:.2f}; "
        "decode x{:.2f}",
        e.time_s, e.depth, FormatRate(e.prefill_tps), e.tokens,
        FormatRate(e.prefill_ratio > 0 ? e.prefill_tps / e.prefill_ratio : 0.0), e.prefill_ratio,
        e.decode_ratio));
    rows.push_back({{"t", e.time_s},
                    {"depth", e.depth},
                    {"tokens", e.tokens},
                    {"prefill_tps", e.prefill_tps},
                    {"expected_prefill_tps", e.expected_prefill_tps},
                    {"prefill_ratio", e.prefill_ratio},
                    {"decode_ratio", e.decode_ratio}});
  }
  a.evidence.push_back("baseline: " + overflow_->baseline().Describe());
  a.data = {{"observations", rows}, {"baseline", overflow_->baseline().Kind()}};
  const int extra = overflow_->ExtraLayers();
  // N as it runs; the command the user knows (the tuned one, which names the
  // wrapper rather than the loader /proc shows) when there is one.
  const ServerSettings* s = running_ ? &*running_ : (reference_ ? &*reference_ : nullptr);
  std::optional<int> n = s ? s->NCpuMoe() : std::nullopt;
  if (!n && reference_) n = reference_->NCpuMoe();
  const ServerSettings* base = reference_ && !reference_->program.empty() ? &*reference_ : s;
  if (s && s->all_cpu_moe()) {
    a.fix =
        "every expert layer is already on the CPU (--cpu-moe): shrink the context (-c), quantize "
        "the KV cache (-ctk/-ctv q8_0) or free GPU memory";
    return a;
  }
  if (!n) {
    a.fix = fmt::format(
        "move {} more layer(s) of experts to the CPU: --n-cpu-moe N+{} (the server's current N "
        "is unknown: watch a local server, or pass --from with the tuned command)",
        extra, extra);
    return a;
  }
  const int from = n.value_or(0);
  int to = from + extra;
  if (options_.n_layer && to > *options_.n_layer) to = *options_.n_layer;
  a.n_cpu_moe_from = from;
  a.n_cpu_moe_to = to;
  if (to == from) {
    a.fix =
        "every expert layer is already on the CPU: shrink the context (-c), quantize the KV "
        "cache (-ctk/-ctv q8_0) or free GPU memory";
    return a;
  }
  a.command = WithNCpuMoe(*base, to);
  a.fix = fmt::format("move {} more layer(s) of experts to the CPU: --n-cpu-moe {} (now {}): {}",
                      to - from, to, from, ShellJoin(a.command));
  a.data["n_cpu_moe_from"] = from;
  a.data["n_cpu_moe_to"] = to;
  return a;
}

Alarm WatchSession::FaultAlarm(double time_s) const {
  Alarm a;
  a.kind = AlarmKind::kPageFaults;
  a.since_s = time_s;
  const auto& ev = faults_.evidence();
  int64_t total = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& e : ev) {
    total += e.major_faults;
    a.evidence.push_back(fmt::format(
        "t={:.0f}s: {} major faults in {:.1f} s ({:.0f}/s) while busy; RSS {} (grew {}){}",
        e.time_s, e.major_faults, e.interval_s,
        e.interval_s > 0 ? static_cast<double>(e.major_faults) / e.interval_s : 0.0,
        FormatBytes(Bytes(e.rss_bytes)), FormatBytes(Bytes(e.rss_growth_bytes)),
        e.mem_available_bytes
            ? fmt::format("; MemAvailable {}", FormatBytes(Bytes(*e.mem_available_bytes)))
            : ""));
    rows.push_back({{"t", e.time_s},
                    {"major_faults", e.major_faults},
                    {"interval_s", e.interval_s},
                    {"rss_bytes", e.rss_bytes},
                    {"rss_growth_bytes", e.rss_growth_bytes}});
  }
  a.title = fmt::format(
      "page cache thrashing: {} major faults under load while the resident size stays flat", total);
  a.data = {{"samples", rows}};
  const ServerSettings* s = running_ ? &*running_ : nullptr;
  const auto n = s ? s->NCpuMoe() : std::nullopt;
  a.fix = fmt::format(
      "the CPU-side experts do not fit in the RAM left to the page cache: keep fewer expert "
      "layers on the CPU{} if the GPU has room, use a smaller quantization, close programs "
      "that use RAM, or add RAM",
      n && *n > 0 ? fmt::format(" (--n-cpu-moe below {})", *n) : "");
  return a;
}

Alarm WatchSession::GpuAlarm(double time_s) const {
  Alarm a;
  a.kind = AlarmKind::kGpuMemoryTaken;
  a.since_s = time_s;
  nlohmann::json rows = nlohmann::json::array();
  std::vector<std::string> names;
  int64_t taken = 0;
  for (const auto& i : gpu_.intruders()) {
    taken += i.bytes;
    const std::string who =
        i.pid ? fmt::format("'{}' (pid {})", i.name, *i.pid) : std::string("an unlisted program");
    names.push_back(who);
    a.evidence.push_back(
        fmt::format("GPU {} ({}): {} holds {} that it did not hold when the "
                    "watch started; free {} now, {} then",
                    i.gpu_index, i.gpu_name, who, FormatBytes(Bytes(i.bytes)),
                    FormatBytes(Bytes(i.free_now)), FormatBytes(Bytes(i.free_at_start))));
    rows.push_back({{"gpu", i.gpu_index},
                    {"pid", i.pid ? nlohmann::json(*i.pid) : nlohmann::json(nullptr)},
                    {"name", i.name},
                    {"bytes", i.bytes},
                    {"free_at_start_bytes", i.free_at_start},
                    {"free_now_bytes", i.free_now}});
  }
  a.title = fmt::format("GPU memory taken since the start by {}", fmt::join(names, ", "));
  a.data = {{"intruders", rows}};
  a.fix = fmt::format(
      "close {} or leave it room: plan again with --reserve {} (moetune plan / serve), which "
      "moves experts to the CPU before the GPU overflows",
      fmt::join(names, ", "), FormatBytes(Bytes(taken)));
  return a;
}

Alarm WatchSession::SettingsAlarm(const std::vector<SettingDifference>& diff, double time_s) const {
  Alarm a;
  a.kind = AlarmKind::kSettingsChanged;
  a.since_s = time_s;
  const bool tuned = options_.expected.has_value();
  a.title = tuned ? "other settings than tuned" : "other settings than when the watch started";
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& d : diff) {
    a.evidence.push_back(fmt::format("{}: {} {}, running {}", FlagName(d.key),
                                     tuned ? "tuned" : "before", d.expected, d.actual));
    rows.push_back({{"setting", d.key}, {"expected", d.expected}, {"actual", d.actual}});
  }
  a.data = {{"differences", rows}};
  if (reference_ && !reference_->program.empty()) {
    const std::vector<std::string> cmd = reference_->Command();
    a.command = cmd;
    a.fix = "restart the server with the " + std::string(tuned ? "tuned" : "previous") +
            " command: " + ShellJoin(cmd);
  } else {
    a.fix =
        "restart the server with the tuned settings (check LLAMA_ARG_* variables and "
        "config.ini files: moetune doctor lists them)";
  }
  return a;
}

}  // namespace moetune
