#include "watch/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "hw/system_memory.h"

namespace moetune {
namespace {

double Delta(const std::optional<double>& now, const std::optional<double>& prev) {
  return now && prev ? *now - *prev : 0.0;
}

bool CountersWentBack(const ServerMetrics& prev, const ServerMetrics& now) {
  auto back = [](const std::optional<double>& a, const std::optional<double>& b) {
    return a && b && *b < *a;
  };
  return back(prev.prompt_tokens_total, now.prompt_tokens_total) ||
         back(prev.tokens_predicted_total, now.tokens_predicted_total) ||
         back(prev.n_decode_total, now.n_decode_total);
}

}  // namespace

Observation DeriveObservation(const Scrape& prev, const Scrape& now) {
  Observation o;
  o.time_s = now.time_s;
  const ServerMetrics& a = prev.metrics;
  const ServerMetrics& b = now.metrics;
  const double dpt = Delta(b.prompt_tokens_total, a.prompt_tokens_total);
  const double dps = Delta(b.prompt_seconds_total, a.prompt_seconds_total);
  const double dgt = Delta(b.tokens_predicted_total, a.tokens_predicted_total);
  const double dgs = Delta(b.tokens_predicted_seconds_total, a.tokens_predicted_seconds_total);
  if (dpt > 0 && dps > 0) o.prefill = WorkSample{dpt, dps, std::nullopt};
  if (dgt > 0 && dgs > 0) o.decode = WorkSample{dgt, dgs, std::nullopt};
  if (!o.prefill && !o.decode) return o;

  // Slots active during the interval: busy at either end, or a new task.
  std::map<int, SlotState> before;
  if (prev.slots) {
    for (const auto& s : *prev.slots) before[s.id] = s;
  }
  std::vector<std::pair<SlotState, std::optional<SlotState>>> active;
  if (now.slots) {
    for (const auto& s : *now.slots) {
      auto it = before.find(s.id);
      const std::optional<SlotState> p =
          it == before.end() ? std::nullopt : std::optional<SlotState>(it->second);
      const bool changed = !p || p->id_task != s.id_task;
      if (s.is_processing || (p && p->is_processing) || changed) active.emplace_back(s, p);
    }
  }
  const double processing =
      std::max(a.requests_processing.value_or(0), b.requests_processing.value_or(0));
  o.concurrent = active.size() > 1 || processing > 1;
  if (active.size() != 1) return o;  // depth unknown (no /slots) or shared

  const SlotState& s = active.front().first;
  const std::optional<SlotState>& p = active.front().second;
  if (!s.depth) return o;
  const double depth = static_cast<double>(*s.depth);
  const bool new_task = !p || p->id_task != s.id_task;
  if (o.prefill) {
    std::optional<double> end;  // context right after the prefill
    if (!s.is_processing) {
      end = depth - std::max(0.0, dgt - 1);
    } else if (new_task || !p->is_processing || p->n_decoded == 0) {
      // The running request was not generating at the previous scrape, so
      // the prefill counted now is its own (the counters move when its first
      // token is sampled) - unless another request also ended in between.
      if (s.n_decoded > 0) {
        end = depth - static_cast<double>(s.n_decoded - 1);
      } else if (dgt == 0) {
        end = depth;
      }
    }
    if (end) o.prefill->depth = std::max(0.0, *end - dpt / 2);
  }
  if (o.decode) {
    if (!s.is_processing) {
      o.decode->depth = std::max(0.0, depth - dgt / 2);
    } else if (new_task && p && p->depth) {
      // The request released in the interval ran on the same slot before.
      o.decode->depth = std::max(0.0, static_cast<double>(*p->depth) - dgt / 2);
    }
  }
  return o;
}

LiveSampler::LiveSampler(SamplerOptions options)
    : options_(std::move(options)), client_(options_.url, options_.timeout) {}

void LiveSampler::LocateProcess() {
  if (options_.pid) {
    pid_ = options_.pid;
    return;
  }
  if (!options_.find_pid || !options_.url.IsLoopback()) return;
  pid_ = FindListeningPid(options_.proc_root, options_.url.port);
}

std::optional<ServerSettings> LiveSampler::settings() const {
  if (!pid_) return std::nullopt;
  auto argv = ReadCmdline(options_.proc_root, *pid_);
  if (argv.empty()) return std::nullopt;
  ServerSettings s = SettingsFromArgv(argv);
  ApplyLlamaEnv(ReadLlamaEnv(options_.proc_root, *pid_), &s);
  return s;
}

Result<Scrape> LiveSampler::TakeScrape() {
  Scrape s;
  MOETUNE_ASSIGN_OR_RETURN(s.metrics, client_.Metrics());
  MOETUNE_ASSIGN_OR_RETURN(s.slots, client_.Slots());
  s.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  if (pid_) s.process = ReadProcessSample(options_.proc_root, *pid_);
  return s;
}

Result<std::unique_ptr<LiveSampler>> LiveSampler::Connect(SamplerOptions options) {
  std::unique_ptr<LiveSampler> s(new LiveSampler(std::move(options)));
  s->t0_ = std::chrono::steady_clock::now();
  // /props first: it tells "not a llama-server" apart from "no --metrics".
  MOETUNE_ASSIGN_OR_RETURN(s->props_, s->client_.Props());
  if (s->props_.endpoint_metrics && !*s->props_.endpoint_metrics) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("{} is a llama-server started without --metrics: restart it with "
                             "--metrics added to its command line (or "
                             "LLAMA_ARG_ENDPOINT_METRICS=1 in its environment)",
                             s->client_.url().ToString()));
  }
  s->LocateProcess();
  MOETUNE_ASSIGN_OR_RETURN(s->last_, s->TakeScrape());
  if (!s->last_.slots) {
    s->notes_.push_back(
        "the server has /slots turned off (--no-slots): the context depth is unknown, so "
        "prefill cannot be compared at equal depth; start it without --no-slots");
  }
  if (s->options_.url.IsLoopback() && !s->pid_) {
    s->notes_.push_back(fmt::format(
        "no process found listening on port {} (another user's, or in a container): memory, "
        "page faults and the command line are not watched; pass --pid",
        s->options_.url.port));
  }
  if (s->options_.gpu_scan) s->first_gpus_ = s->options_.gpu_scan();
  return s;
}

Result<LiveSample> LiveSampler::Next() {
  const Scrape prev = last_;
  MOETUNE_ASSIGN_OR_RETURN(Scrape now, TakeScrape());
  LiveSample out;
  out.time_s = now.time_s;
  out.interval_s = now.time_s - prev.time_s;
  bool process_changed = false;
  if (pid_ &&
      (!now.process || (prev.process && now.process->start_ticks != prev.process->start_ticks))) {
    process_changed = true;
    if (!options_.pid) {
      LocateProcess();
      if (pid_) now.process = ReadProcessSample(options_.proc_root, *pid_);
    }
  }
  out.restarted = CountersWentBack(prev.metrics, now.metrics) || process_changed;
  if (out.restarted) {
    if (auto p = client_.Props(); p.ok()) props_ = *p;
  } else {
    out.observation = DeriveObservation(prev, now);
  }
  out.observation.time_s = now.time_s;
  if (now.slots) {
    out.slots_total = static_cast<int>(now.slots->size());
    for (const auto& s : *now.slots) {
      if (s.is_processing) ++out.slots_busy;
      if (s.depth) out.max_depth = std::max(out.max_depth.value_or(0), *s.depth);
    }
  }
  out.requests_processing = now.metrics.requests_processing.value_or(0);
  out.requests_deferred = now.metrics.requests_deferred.value_or(0);
  out.busy = out.observation.prefill || out.observation.decode || out.slots_busy > 0 ||
             out.requests_processing > 0;
  if (now.process && prev.process && !out.restarted) {
    out.major_faults = std::max<int64_t>(0, now.process->major_faults - prev.process->major_faults);
    out.rss_growth_bytes = now.process->rss_bytes - prev.process->rss_bytes;
  }
  if (now.process) {
    out.mem_available_bytes = ReadSystemMemory(options_.proc_root).available_bytes;
  }
  if (options_.gpu_scan) {
    out.gpus = options_.gpu_scan();
    out.gpu_scanned = true;
  }
  out.now = now;
  last_ = std::move(now);
  return out;
}

}  // namespace moetune
