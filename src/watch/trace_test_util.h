#pragma once
/// Test support: conversations generated from a speed function, written out
/// the three ways watch meets them (a llama-server log, per-request
/// observations, live intervals where a request's prefill and decode arrive
/// in two samples), and the recorded fixtures under tests/fixtures/watch.
///
/// Conversations from the simulated engine's silent-spill mode come in the
/// same Conversation (watch/sim_trace_test_util.h), so every trace is judged
/// the same three ways.

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "watch/observation.h"

namespace moetune::testing {

inline std::string WatchFixture(const std::string& name) {
  return std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/watch/" + name;
}

/// Prefill and decode tokens/s with `depth` tokens in the context.
using SpeedAtDepth = std::function<std::pair<double, double>(double depth)>;

/// Healthy speeds whose time per token grows linearly with depth (attention).
inline SpeedAtDepth Healthy(double prefill0, double decode0, double prefill_half_depth,
                            double decode_half_depth) {
  return [=](double d) {
    return std::make_pair(prefill0 / (1 + d / prefill_half_depth),
                          decode0 / (1 + d / decode_half_depth));
  };
}

/// The overflow signature on top of `base`: beyond `from_depth` prefill is
/// divided by `prefill_factor` and decode by `decode_factor` (silent spill:
/// prefill collapses several-fold, decode drops by a fifth or so).
inline SpeedAtDepth Spill(const SpeedAtDepth& base, double from_depth, double prefill_factor,
                          double decode_factor) {
  return [=](double d) {
    auto s = base(d);
    if (d >= from_depth) {
      s.first /= prefill_factor;
      s.second /= decode_factor;
    }
    return s;
  };
}

struct Turn {
  int prompt = 0;  // new tokens to process
  int answer = 0;  // tokens generated
};

/// `n` chat turns of `prompt` new tokens and `answer` generated ones each.
inline std::vector<Turn> ChatTurns(int n = 12, int prompt = 1000, int answer = 120) {
  return std::vector<Turn>(static_cast<std::size_t>(n), Turn{prompt, answer});
}

struct Request {
  double t = 0;
  int depth_start = 0;
  Turn turn;
  double prompt_s = 0, answer_s = 0;
  int n_tokens_end = 0;
};

struct Conversation {
  std::vector<Request> requests;

  /// One observation per request, as a log gives them.
  std::vector<Observation> PerRequest() const {
    std::vector<Observation> out;
    for (const auto& r : requests) {
      Observation o;
      o.time_s = r.t;
      o.prefill = WorkSample{static_cast<double>(r.turn.prompt), r.prompt_s,
                             r.depth_start + r.turn.prompt / 2.0};
      o.decode = WorkSample{static_cast<double>(r.turn.answer), r.answer_s,
                            r.depth_start + r.turn.prompt + r.turn.answer / 2.0};
      out.push_back(o);
    }
    return out;
  }
  /// Two observations per request, as live sampling sees them: the prefill
  /// when the first token is sampled, the decode when the request ends.
  std::vector<Observation> Live() const {
    std::vector<Observation> out;
    for (const auto& o : PerRequest()) {
      Observation a, b;
      a.time_s = o.time_s;
      a.prefill = o.prefill;
      b.time_s = o.time_s + 0.5;
      b.decode = o.decode;
      out.push_back(a);
      out.push_back(b);
    }
    return out;
  }
  /// The log llama-server 0.7.0 (build 11669) writes for these requests.
  std::string Log(const std::string& model = "sim.gguf", int n_ctx_slot = 65536) const {
    std::string s = "0.00.001.000 I srv  llama_server: initializing ...\n";
    s += fmt::format("0.00.040.000 I srv    load_model: loading model '{}'\n", model);
    s += fmt::format(
        "0.00.120.000 I srv    load_model: initializing, n_slots = 1, n_ctx_slot = {}, "
        "kv_unified = 'false'\n",
        n_ctx_slot);
    int task = 0;
    for (const auto& r : requests) {
      const int m = static_cast<int>(r.t / 60);
      const double sec = r.t - 60.0 * m;
      const std::string ts = fmt::format("{}.{:02d}.{:03d}.000", m, static_cast<int>(sec),
                                         static_cast<int>((sec - std::floor(sec)) * 1000));
      s += fmt::format("{} I slot launch_slot_: id  0 | task {} | processing task, is_child = 0\n",
                       ts, task);
      s += fmt::format(
          "{} I slot print_timing: id  0 | task {} | prompt eval time = {:10.2f} ms / {:5d} "
          "tokens ({:8.2f} ms per token, {:8.2f} tokens per second)\n",
          ts, task, r.prompt_s * 1e3, r.turn.prompt, r.prompt_s * 1e3 / r.turn.prompt,
          r.turn.prompt / r.prompt_s);
      s += fmt::format(
          "{} I slot print_timing: id  0 | task {} |        eval time = {:10.2f} ms / {:5d} "
          "tokens ({:8.2f} ms per token, {:8.2f} tokens per second)\n",
          ts, task, r.answer_s * 1e3, r.turn.answer, r.answer_s * 1e3 / r.turn.answer,
          r.turn.answer / r.answer_s);
      s += fmt::format(
          "{} I slot      release: id  0 | task {} | stop processing: n_tokens = {}, truncated "
          "= 0\n",
          ts, task, r.n_tokens_end);
      task += r.turn.answer + 1;
    }
    return s;
  }
};

/// A conversation: each turn's prompt follows the previous context; speeds
/// from `speed` at the mid depth of each part, times `noise` (log-normal
/// spread, 0 = none).
inline Conversation Converse(const std::vector<Turn>& turns, const SpeedAtDepth& speed,
                             unsigned seed = 1, double noise = 0.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n01(0, 1);
  Conversation c;
  int depth = 0;
  double t = 1;
  for (const auto& turn : turns) {
    Request r;
    r.t = t;
    r.depth_start = depth;
    r.turn = turn;
    const auto p = speed(depth + turn.prompt / 2.0);
    const auto d = speed(depth + turn.prompt + turn.answer / 2.0);
    r.prompt_s = turn.prompt / p.first * std::exp(noise * n01(rng));
    r.answer_s = turn.answer / d.second * std::exp(noise * n01(rng));
    depth += turn.prompt + turn.answer;
    r.n_tokens_end = depth - 1;
    depth = r.n_tokens_end;
    t += r.prompt_s + r.answer_s + 2;
    c.requests.push_back(r);
  }
  return c;
}

}  // namespace moetune::testing
