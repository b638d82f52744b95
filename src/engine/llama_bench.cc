#include "engine/llama_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "engine/bench_jsonl.h"
#include "util/subprocess.h"

namespace moetune {
namespace {

using ContextKey = std::tuple<int, int, int, int, std::string, std::string, std::string>;
using TestKey = std::pair<int, int>;  // (n_prompt, n_gen)

constexpr std::size_t kMaxDiagnostics = 200;
constexpr std::size_t kTailLines = 40;

// Distinct values in first-appearance order.
template <typename T>
void AddUnique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

template <typename T>
std::string Join(const std::vector<T>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

// True when `keys` is exactly the cartesian product of its per-dimension
// values (then comma lists reproduce it with nothing extra), and no
// dimension mixes "engine default" (empty) with explicit values.
bool IsGrid(const std::vector<ContextKey>& keys) {
  std::vector<int> t, ub, b, d;
  std::vector<std::string> ck, cv, fa;
  for (const auto& k : keys) {
    AddUnique(t, std::get<0>(k));
    AddUnique(ub, std::get<1>(k));
    AddUnique(b, std::get<2>(k));
    AddUnique(d, std::get<3>(k));
    AddUnique(ck, std::get<4>(k));
    AddUnique(cv, std::get<5>(k));
    AddUnique(fa, std::get<6>(k));
  }
  for (const auto* dim : {&ck, &cv, &fa}) {
    if (dim->size() > 1 && std::find(dim->begin(), dim->end(), "") != dim->end()) return false;
  }
  const std::size_t product =
      t.size() * ub.size() * b.size() * d.size() * ck.size() * cv.size() * fa.size();
  return product == keys.size();
}

bool RecordMatches(const BenchRecord& r, const RunConfig& c) {
  if (r.n_prompt != c.n_prompt || r.n_gen != c.n_gen) return false;
  const auto& raw = r.raw;
  if (raw.contains("n_depth") && r.n_depth != c.n_depth) return false;
  if (raw.contains("n_threads") && r.n_threads != c.threads) return false;
  if (raw.contains("n_ubatch") && r.n_ubatch != c.placement.n_ubatch) return false;
  if (raw.contains("n_batch") && r.n_batch != c.placement.n_batch) return false;
  if (!r.type_k.empty() && r.type_k != c.placement.type_k) return false;
  if (!r.type_v.empty() && r.type_v != c.placement.type_v) return false;
  if (!c.placement.flash_attn.empty() && !r.flash_attn.empty() &&
      r.flash_attn != c.placement.flash_attn) {
    return false;
  }
  return true;
}

}  // namespace

std::string CpuMoeOverride(int n_cpu_moe) {
  std::vector<std::string> parts;
  for (int i = 0; i < n_cpu_moe; ++i)
    parts.push_back(fmt::format("blk\\.{}\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU", i));
  return Join(parts);
}

int BenchRun::TotalModelLoads() const {
  int total = 0;
  for (const auto& inv : invocations) {
    if (inv.model_loads < 0) return -1;
    total += inv.model_loads;
  }
  return total;
}

std::size_t BenchRun::FailureCount() const {
  std::size_t n = 0;
  for (const auto& r : results) n += r.ok() ? 0 : 1;
  return n;
}

LlamaBenchEngine::LlamaBenchEngine(EngineInfo info, LlamaBenchOptions options)
    : info_(std::move(info)), options_(std::move(options)) {}

std::vector<std::string> LlamaBenchEngine::BuildArgv(
    const std::vector<const RunConfig*>& group, std::optional<std::string>* unsupported) const {
  const RunConfig& first = *group.front();
  const bool known = !info_.bench_flags.empty();  // flags unknown: trust the defaults
  auto has = [&](const char* flag) { return !known || info_.HasBenchFlag(flag); };
  std::vector<std::string> argv = {info_.ToolPath("llama-bench"), "-m", first.model, "-o", "jsonl"};
  if (has("--progress")) argv.push_back("--progress");
  if (options_.count_loads) argv.push_back("-v");
  argv.insert(argv.end(), {"-r", std::to_string(first.repetitions)});
  if (!first.warmup) argv.push_back("--no-warmup");
  // Placement is always explicit: -ngl and -ncmoe are passed even at their
  // defaults, and automatic fitting is never requested (no -fitt), so the
  // engine measures exactly the placement asked for.
  argv.insert(argv.end(), {"-ngl", std::to_string(first.placement.n_gpu_layers)});
  std::string ot = first.placement.override_tensor;
  if (has("-ncmoe")) {
    argv.insert(argv.end(), {"-ncmoe", std::to_string(first.placement.n_cpu_moe)});
  } else if (first.placement.n_cpu_moe > 0) {
    const std::string moe = CpuMoeOverride(first.placement.n_cpu_moe);
    ot = ot.empty() ? moe : ot + "," + moe;
  }
  if (!ot.empty()) {
    if (!has("-ot")) *unsupported = "this llama-bench has no -ot/--override-tensor flag";
    argv.insert(argv.end(), {"-ot", ot});
  }
  if (!first.load_mode.empty()) {
    if (!has("-lm")) *unsupported = "this llama-bench has no -lm/--load-mode flag";
    argv.insert(argv.end(), {"-lm", first.load_mode});
  }
  if (!first.rpc.empty()) {
    if (!has("--rpc")) *unsupported = "this llama-bench has no --rpc flag (no RPC backend)";
    argv.insert(argv.end(), {"--rpc", first.rpc});
  }

  std::vector<int> t, ub, b, d;
  std::vector<std::string> ck, cv, fa;
  std::vector<int> prompts, gens;
  std::vector<TestKey> pgs;
  for (const RunConfig* c : group) {
    AddUnique(t, c->threads);
    AddUnique(ub, c->placement.n_ubatch);
    AddUnique(b, c->placement.n_batch);
    AddUnique(d, c->n_depth);
    AddUnique(ck, c->placement.type_k);
    AddUnique(cv, c->placement.type_v);
    AddUnique(fa, c->placement.flash_attn);
    switch (c->kind()) {
      case TestKind::kPrefill:
        AddUnique(prompts, c->n_prompt);
        break;
      case TestKind::kDecode:
        AddUnique(gens, c->n_gen);
        break;
      case TestKind::kPrefillDecode:
        AddUnique(pgs, TestKey{c->n_prompt, c->n_gen});
        break;
    }
  }
  argv.insert(argv.end(), {"-t", Join(t), "-ub", Join(ub), "-b", Join(b)});
  if (d.size() > 1 || d.front() != 0) {
    if (!has("-d"))
      *unsupported =
          "this llama-bench has no -d/--n-depth flag (depth tests need a newer llama.cpp)";
    argv.insert(argv.end(), {"-d", Join(d)});
  }
  argv.insert(argv.end(), {"-ctk", Join(ck), "-ctv", Join(cv)});
  if (!fa.front().empty()) argv.insert(argv.end(), {"-fa", Join(fa)});
  // -p and -n default to 512 and 128: always pass them (0 = no such test).
  argv.insert(argv.end(),
              {"-p", prompts.empty() ? "0" : Join(prompts), "-n", gens.empty() ? "0" : Join(gens)});
  for (const auto& [p, n] : pgs) argv.insert(argv.end(), {"-pg", fmt::format("{},{}", p, n)});
  return argv;
}

std::vector<LlamaBenchEngine::Invocation> LlamaBenchEngine::PlanInvocations(
    const std::vector<RunConfig>& configs) const {
  // Unique configurations, grouped by model key in first-appearance order.
  std::vector<std::size_t> unique;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    bool dup = false;
    for (std::size_t u : unique) dup = dup || configs[u] == configs[i];
    if (!dup) unique.push_back(i);
  }
  std::vector<std::string> model_keys;
  std::map<std::string, std::vector<std::size_t>> by_model;
  for (std::size_t i : unique) {
    const std::string key = configs[i].ModelKey();
    if (!by_model.count(key)) model_keys.push_back(key);
    by_model[key].push_back(i);
  }

  std::vector<Invocation> out;
  for (const auto& mk : model_keys) {
    const auto& members = by_model[mk];
    // Context key -> the tests measured with it.
    std::vector<ContextKey> ctx_order;
    std::map<ContextKey, std::set<TestKey>> tests;
    std::map<ContextKey, std::vector<std::size_t>> ctx_members;
    for (std::size_t i : members) {
      const ContextKey k = configs[i].ContextKey();
      if (!tests.count(k)) ctx_order.push_back(k);
      tests[k].insert({configs[i].n_prompt, configs[i].n_gen});
      ctx_members[k].push_back(i);
    }
    // Context keys with the same test set may share a process if they form a grid.
    std::vector<std::vector<ContextKey>> partitions;
    std::vector<std::set<TestKey>> partition_tests;
    for (const auto& k : ctx_order) {
      bool placed = false;
      for (std::size_t p = 0; p < partitions.size() && !placed; ++p) {
        if (partition_tests[p] == tests[k]) {
          partitions[p].push_back(k);
          placed = true;
        }
      }
      if (!placed) {
        partitions.push_back({k});
        partition_tests.push_back(tests[k]);
      }
    }
    std::vector<std::vector<ContextKey>> groups;
    for (auto& part : partitions) {
      if (IsGrid(part)) {
        groups.push_back(part);
      } else {
        for (const auto& k : part) groups.push_back({k});
      }
    }
    for (const auto& g : groups) {
      Invocation inv;
      std::vector<const RunConfig*> ptrs;
      for (const auto& k : g) {
        for (std::size_t i : ctx_members[k]) {
          inv.configs.push_back(i);
          ptrs.push_back(&configs[i]);
        }
      }
      inv.argv = BuildArgv(ptrs, &inv.unsupported);
      out.push_back(std::move(inv));
    }
  }
  return out;
}

BenchRun LlamaBenchEngine::Run(const std::vector<RunConfig>& configs,
                               const ProgressCallback& progress) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  BenchRun run;
  run.results.resize(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) run.results[i].config = configs[i];
  const auto plan = PlanInvocations(configs);
  std::size_t tests_total = 0;
  for (const auto& inv : plan) tests_total += inv.configs.size();
  std::size_t tests_done = 0;

  BenchProgress p;
  p.tests_total = tests_total;
  p.invocations_total = plan.size();
  auto report = [&](const std::string& current) {
    if (!progress) return;
    p.tests_done = tests_done;
    p.elapsed_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    p.current = current;
    progress(p);
  };

  static const std::regex kProgressLine(R"(benchmark (\d+)/(\d+): (.*)$)");
  for (std::size_t n = 0; n < plan.size(); ++n) {
    const auto& inv = plan[n];
    p.invocation = n + 1;
    InvocationReport rep;
    rep.argv = inv.argv;
    rep.configs = inv.configs;
    const int inv_index = static_cast<int>(run.invocations.size());
    auto fail_all = [&](const EngineFailure& f) {
      for (std::size_t i : inv.configs) {
        if (run.results[i].ok() && run.results[i].record.is_null()) {
          run.results[i].failure = f;
          run.results[i].invocation = inv_index;
        }
      }
    };
    if (inv.unsupported) {
      EngineFailure f{FailureKind::kInvalidConfig, *inv.unsupported, "not started", {}};
      rep.failure = f;
      rep.exit = "not started";
      fail_all(f);
      tests_done += inv.configs.size();
      run.invocations.push_back(std::move(rep));
      report("");
      continue;
    }

    RunOptions o;
    o.spawn.argv = inv.argv;
    o.spawn.env_set = options_.env;
    o.timeout =
        options_.timeout_per_test * static_cast<long>(inv.configs.size()) + options_.load_allowance;
    o.capture_stdout = true;
    o.stderr_tail_lines = 0;
    std::vector<std::string> diagnostics;
    std::deque<std::string> tail;
    int loads = 0;
    std::size_t done_here = 0;
    const std::size_t done_before = tests_done;
    std::string current;
    o.on_stderr_line = [&](std::string_view line) {
      if (IsNoiseLine(line)) return;
      if (line.find("llama_model_loader: loaded meta data") != std::string_view::npos) ++loads;
      if (IsDiagnosticLine(line) && diagnostics.size() < kMaxDiagnostics)
        diagnostics.emplace_back(line);
      tail.emplace_back(line);
      if (tail.size() > kTailLines) tail.pop_front();
      if (options_.on_engine_line) options_.on_engine_line(line);
      std::smatch m;
      const std::string s(line);
      if (s.find("llama-bench: benchmark") != std::string::npos &&
          std::regex_search(s, m, kProgressLine)) {
        const std::size_t idx = std::stoul(m[1]);
        if (idx >= 1 && idx - 1 < inv.configs.size()) {
          const RunConfig& c = configs[inv.configs[idx - 1]];
          current = fmt::format("{} t={} ub={} ngl={} ncmoe={}: {}", c.test_name(), c.threads,
                                c.placement.n_ubatch, c.placement.n_gpu_layers,
                                c.placement.n_cpu_moe, std::string(m[3]));
        }
        tests_done = done_before + std::min(done_here, inv.configs.size());
        report(current);
      }
    };
    o.on_stdout_line = [&](std::string_view line) {
      if (!line.empty() && line.front() == '{') {
        ++done_here;
        tests_done = done_before + std::min(done_here, inv.configs.size());
        report(current);
      }
    };
    report("starting " + std::to_string(inv.configs.size()) + " test(s)");
    auto out = RunProcess(o);
    if (!out.ok()) {
      EngineFailure f{out.error().kind() == ErrorKind::kNotFound ? FailureKind::kEngineMissing
                                                                 : FailureKind::kEngineError,
                      out.error().message() +
                          "; install the engine (scripts/setup-engine.sh) or pass --llama-dir",
                      "not started",
                      {}};
      rep.failure = f;
      rep.exit = "not started";
      fail_all(f);
      tests_done = done_before + inv.configs.size();
      run.invocations.push_back(std::move(rep));
      continue;
    }
    rep.wall_seconds = out->wall_seconds;
    rep.exit = out->status.Describe();
    rep.timed_out = out->timed_out;
    rep.model_loads = options_.count_loads ? loads : -1;

    std::vector<std::string> bad;
    auto records = ParseBenchJsonl(out->stdout_text, &bad);
    std::vector<bool> taken(inv.configs.size(), false);
    for (auto& r : records) {
      for (std::size_t k = 0; k < inv.configs.size(); ++k) {
        if (taken[k] || !RecordMatches(r, configs[inv.configs[k]])) continue;
        taken[k] = true;
        RunResult& res = run.results[inv.configs[k]];
        res.avg_ts = r.avg_ts;
        res.stddev_ts = r.stddev_ts;
        res.samples_ts = r.samples_ts;
        res.samples_ns = r.samples_ns;
        res.record = std::move(r.raw);
        res.invocation = inv_index;
        if (run.backends.empty()) run.backends = r.backends;
        break;
      }
    }
    const bool all_taken = std::all_of(taken.begin(), taken.end(), [](bool x) { return x; });
    if (!all_taken || !out->status.success() || out->timed_out) {
      const double limit = std::chrono::duration<double>(*o.timeout).count();
      EngineFailure f = ClassifyFailure(out->status, out->timed_out, limit, diagnostics, tail);
      if (f.kind == FailureKind::kUnparseable) {
        f.message = bad.empty()
                        ? fmt::format(
                              "the engine exited normally but printed no result for {} of {} "
                              "configuration(s)",
                              std::count(taken.begin(), taken.end(), false), taken.size())
                        : fmt::format("unparseable output from the engine: {}", bad.front());
      }
      rep.failure = f;
      fail_all(f);
    }
    tests_done = done_before + inv.configs.size();
    run.invocations.push_back(std::move(rep));
  }
  // Duplicates of a configuration share the first one's result.
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (run.results[i].invocation >= 0) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (configs[j] == configs[i]) {
        run.results[i] = run.results[j];
        break;
      }
    }
  }
  report("");
  return run;
}

}  // namespace moetune
