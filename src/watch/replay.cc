#include "watch/replay.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "util/json_parse.h"

namespace moetune {

Replay ReplayObservations(const std::vector<Observation>& observations, SessionOptions options) {
  WatchSession session(std::move(options));
  Replay r;
  for (const auto& o : observations) {
    ReplayEntry e;
    e.observation = o;
    e.events = session.AddObservation(o, &e.check);
    r.entries.push_back(std::move(e));
  }
  r.active_at_end = session.ActiveAlarms();
  r.verdict = session.verdict();
  r.verdict.observations = static_cast<int>(observations.size());
  return r;
}

Replay ReplayLog(const ServerLog& log, SessionOptions options) {
  WatchSession session(std::move(options));
  Replay r;
  if (!log.model_path.empty() || log.n_slots > 0) {
    ServerProps props;
    props.model_path = log.model_path;
    props.total_slots = log.n_slots;
    props.n_ctx_per_slot = log.n_ctx_slot;
    r.start_events = session.SetServerProps(props, 0, false);
  }
  double t = 0;
  for (const auto& req : log.requests) {
    ReplayEntry e;
    e.request = &req;
    e.observation = req.ToObservation(t);
    t = e.observation.time_s + 1;
    e.events = session.AddObservation(e.observation, &e.check);
    r.entries.push_back(std::move(e));
  }
  r.active_at_end = session.ActiveAlarms();
  r.verdict = session.verdict();
  r.verdict.observations = static_cast<int>(log.requests.size());
  return r;
}

Result<std::vector<Observation>> ParseTrace(const std::string& text) {
  std::vector<Observation> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto parsed = ParseJson(line, fmt::format("trace line {}", n));
    if (!parsed.ok()) return parsed.take_error();
    const nlohmann::json& j = *parsed;
    if (!j.is_object())
      return Error(ErrorKind::kFormat, fmt::format("trace line {} is not a JSON object", n));
    if (auto ev = j.find("event"); ev != j.end()) {
      if (!ev->is_string() || (*ev != "sample" && *ev != "request")) continue;
    }
    auto o = ObservationFromJson(j);
    if (!o.ok()) return o.take_error().Context(fmt::format("trace line {}", n));
    out.push_back(*o);
  }
  return out;
}

Result<std::vector<Observation>> ReadTrace(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Error(ErrorKind::kNotFound, fmt::format("cannot open trace {}", path));
  std::stringstream ss;
  ss << f.rdbuf();
  auto r = ParseTrace(ss.str());
  if (!r.ok()) return r.take_error().Context(path);
  return r;
}

}  // namespace moetune
