#pragma once
/// Helpers for the watch and serve integration tests: a tiny model with a
/// long training context, `moetune serve` in the background with its JSON
/// lines in a file, a chat client over the real HTTP API, and /proc checks.

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {

/// JSON objects of the lines of `path` that start with '{'.
inline std::vector<nlohmann::json> JsonLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

inline std::vector<nlohmann::json> Events(const std::string& path, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (auto& j : JsonLines(path)) {
    if (j.value("event", "") == name) out.push_back(std::move(j));
  }
  return out;
}

/// Polls `done` every 50 ms for up to `seconds`.
inline bool WaitFor(const std::function<bool()>& done, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

/// /proc/PID/cmdline as an argument vector.
inline std::vector<std::string> ReadCmdlineOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::string> argv;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    argv.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return argv;
}

/// `moetune ARGS...` in the background: stdout and stderr in files.
class Moetune {
 public:
  Moetune(const std::vector<std::string>& args, const TempDir& dir, const std::string& name)
      : out_(dir.File(name + ".out")), err_(dir.File(name + ".err")) {
    SpawnOptions s;
    s.argv = {MoetuneBinary()};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.stdout_mode = OutputMode::kFile;
    s.stdout_file = out_;
    s.stderr_mode = OutputMode::kFile;
    s.stderr_file = err_;
    if (auto d = EngineDir()) s.env_set.emplace_back("MOETUNE_LLAMA_DIR", d->string());
    auto c = ChildProcess::Spawn(s);
    if (c.ok()) child_ = std::move(c).value();
  }
  bool started() const { return child_ != nullptr; }
  pid_t pid() const { return child_ ? child_->pid() : -1; }
  const std::string& out() const { return out_; }
  std::string err() const {
    std::ifstream f(err_);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  std::optional<ExitStatus> Poll() { return child_ ? child_->Poll() : std::nullopt; }
  /// Waits up to `seconds` for it to end.
  std::optional<ExitStatus> Wait(double seconds) {
    std::optional<ExitStatus> st;
    WaitFor([&] { return (st = Poll()).has_value(); }, seconds);
    return st;
  }

 private:
  std::string out_, err_;
  std::unique_ptr<ChildProcess> child_;
};

/// One /v1/chat/completions answer's timings.
struct ChatTimings {
  int prompt_n = 0, cache_n = 0, predicted_n = 0;
  double prompt_per_second = 0, predicted_per_second = 0;
};

/// A conversation that grows by one user message and one answer per turn.
class Conversation {
 public:
  explicit Conversation(int port) : client_("127.0.0.1", port) {
    client_.set_read_timeout(300, 0);
    messages_.push_back({{"role", "system"}, {"content", "You are a test."}});
  }
  /// Sends `words` more words (about 5 tokens each with the tiny vocabulary).
  std::optional<ChatTimings> Turn(int words, int answer_tokens) {
    std::string text = "Tell me about topic " + std::to_string(messages_.size()) + ".";
    for (int i = 0; i < words; ++i) text += " words";
    messages_.push_back({{"role", "user"}, {"content", text}});
    const nlohmann::json req = {{"messages", messages_},
                                {"max_tokens", answer_tokens},
                                {"temperature", 0},
                                {"ignore_eos", true}};
    auto res = client_.Post("/v1/chat/completions", req.dump(), "application/json");
    if (!res || res->status != 200) return std::nullopt;
    const auto j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.contains("timings")) return std::nullopt;
    const auto& t = j["timings"];
    ChatTimings out{t.value("prompt_n", 0), t.value("cache_n", 0), t.value("predicted_n", 0),
                    t.value("prompt_per_second", 0.0), t.value("predicted_per_second", 0.0)};
    messages_.push_back(
        {{"role", "assistant"}, {"content", j["choices"][0]["message"].value("content", "")}});
    return out;
  }

 private:
  httplib::Client client_;
  nlohmann::json messages_ = nlohmann::json::array();
};

}  // namespace moetune::itest
