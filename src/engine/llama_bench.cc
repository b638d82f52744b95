#include "engine/llama_bench.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "config/flags.h"
#include "config/tensor_override.h"
#include "engine/bench_jsonl.h"
#include "engine/engine_output.h"
#include "engine/rpc_host.h"
#include "hw/machine_load.h"
#include "util/subprocess.h"

namespace moetune {
namespace {

using ContextKey = std::tuple<int, int, int, int, uint32_t, uint32_t, FlashAttn>;
using TestKey = std::pair<int, int>;  // (n_prompt, n_gen)

constexpr std::size_t kMaxDiagnostics = 200;
constexpr std::size_t kTailLines = 40;

// Distinct values in first-appearance order, with their positions (so that a
// sweep of n configurations stays O(n log n), never O(n^2)).
template <typename T>
class UniqueList {
 public:
  void Add(const T& x) {
    if (index_.emplace(x, values_.size()).second) values_.push_back(x);
  }
  std::size_t IndexOf(const T& x) const { return index_.at(x); }
  const std::vector<T>& values() const { return values_; }
  std::size_t size() const { return values_.size(); }

 private:
  std::vector<T> values_;
  std::map<T, std::size_t> index_;
};

template <typename T>
std::string Join(const std::vector<T>& v) {
  return fmt::format("{}", fmt::join(v, ","));
}

// The comma lists of one invocation.
struct SweepLists {
  UniqueList<int> t, ub, b, d;
  UniqueList<uint32_t> ck, cv;
  UniqueList<FlashAttn> fa;
  UniqueList<int> prompts, gens;
  UniqueList<TestKey> pgs;
};

SweepLists ListsOf(const std::vector<const RunConfig*>& group) {
  SweepLists l;
  for (const RunConfig* c : group) {
    l.t.Add(c->threads);
    l.ub.Add(c->n_ubatch);
    l.b.Add(c->n_batch);
    l.d.Add(c->n_depth);
    l.ck.Add(c->type_k);
    l.cv.Add(c->type_v);
    l.fa.Add(c->flash_attn);
    switch (c->kind()) {
      case TestKind::kPrefill:
        l.prompts.Add(c->n_prompt);
        break;
      case TestKind::kDecode:
        l.gens.Add(c->n_gen);
        break;
      case TestKind::kPrefillDecode:
        l.pgs.Add(TestKey{c->n_prompt, c->n_gen});
        break;
    }
  }
  return l;
}

// Where llama-bench runs `c` among the tests of an invocation with lists `l`.
// get_cmd_params_instances (tools/llama-bench/llama-bench.cpp) nests, outer to
// inner: ... n_batch, n_ubatch, type_k, type_v, no_kv_offload, flash_attn,
// n_threads, cpu_mask, cpu_strict, n_depth, poll, and then the -p tests, the
// -n tests and the -pg tests (checked against the installed build: with
// -t 1,2 -b 512,1024 it runs b=512 t=1, b=512 t=2, b=1024 t=1, b=1024 t=2).
std::vector<std::size_t> EngineOrder(const RunConfig& c, const SweepLists& l) {
  std::size_t test = 0;
  switch (c.kind()) {
    case TestKind::kPrefill:
      test = l.prompts.IndexOf(c.n_prompt);
      break;
    case TestKind::kDecode:
      test = l.prompts.size() + l.gens.IndexOf(c.n_gen);
      break;
    case TestKind::kPrefillDecode:
      test = l.prompts.size() + l.gens.size() + l.pgs.IndexOf(TestKey{c.n_prompt, c.n_gen});
      break;
  }
  return {l.b.IndexOf(c.n_batch),     l.ub.IndexOf(c.n_ubatch),
          l.ck.IndexOf(c.type_k),     l.cv.IndexOf(c.type_v),
          l.fa.IndexOf(c.flash_attn), l.t.IndexOf(c.threads),
          l.d.IndexOf(c.n_depth),     test};
}

// True when `keys` is exactly the cartesian product of its per-dimension
// values (then comma lists reproduce it with nothing extra), and no
// dimension mixes "engine default" (empty) with explicit values.
bool IsGrid(const std::vector<ContextKey>& keys) {
  UniqueList<int> t, ub, b, d;
  UniqueList<uint32_t> ck, cv;
  UniqueList<FlashAttn> fa;
  for (const auto& k : keys) {
    t.Add(std::get<0>(k));
    ub.Add(std::get<1>(k));
    b.Add(std::get<2>(k));
    d.Add(std::get<3>(k));
    ck.Add(std::get<4>(k));
    cv.Add(std::get<5>(k));
    fa.Add(std::get<6>(k));
  }
  const auto& fas = fa.values();
  if (fas.size() > 1 && std::find(fas.begin(), fas.end(), FlashAttn::kDefault) != fas.end())
    return false;
  const std::size_t product =
      t.size() * ub.size() * b.size() * d.size() * ck.size() * cv.size() * fa.size();
  return product == keys.size();
}

// Every field of a configuration, for finding duplicates in linear time.
std::string FullKey(const RunConfig& c) {
  return fmt::format("{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}\x1e{}", c.ModelKey(),
                     c.ctx_size, c.threads, c.n_ubatch, c.n_batch, c.n_depth, c.type_k, c.type_v,
                     FlashAttnName(c.flash_attn), fmt::format("{}\x1e{}", c.n_prompt, c.n_gen));
}

// For each configuration, the index of the first one equal to it.
std::vector<std::size_t> FirstOfEach(const std::vector<RunConfig>& configs) {
  std::unordered_map<std::string, std::size_t> first;
  std::vector<std::size_t> out(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) {
    out[i] = first.emplace(FullKey(configs[i]), i).first->second;
  }
  return out;
}

bool RecordMatches(const BenchRecord& r, const RunConfig& c) {
  if (r.n_prompt != c.n_prompt || r.n_gen != c.n_gen) return false;
  const auto& raw = r.raw;
  if (raw.contains("n_depth") && r.n_depth != c.n_depth) return false;
  if (raw.contains("n_threads") && r.n_threads != c.threads) return false;
  if (raw.contains("n_ubatch") && r.n_ubatch != c.n_ubatch) return false;
  if (raw.contains("n_batch") && r.n_batch != c.n_batch) return false;
  if (!r.type_k.empty() && r.type_k != GgmlTypeName(c.type_k)) return false;
  if (!r.type_v.empty() && r.type_v != GgmlTypeName(c.type_v)) return false;
  // Both sides typed: "-fa 1" is reported as 1 and meant "on".
  if (c.flash_attn != FlashAttn::kDefault && !r.flash_attn.empty()) {
    auto fa = ParseFlashAttn(r.flash_attn);
    if (!fa.ok() || *fa != c.flash_attn) return false;
  }
  return true;
}

std::string ProgressLabel(const RunConfig& c) {
  std::string label =
      fmt::format("{} t={} b={} ub={}", c.test_name(), c.threads, c.n_batch, c.n_ubatch);
  if (c.flash_attn != FlashAttn::kDefault)
    label += fmt::format(" fa={}", FlashAttnName(c.flash_attn));
  return label + fmt::format(" ngl={} ncmoe={}", c.placement.n_gpu_layers, c.placement.n_cpu_moe);
}

// The swept settings of one invocation (threads, batch sizes, depths, cache
// types, flash attention and the tests), each list as llama-bench reads it.
template <typename Spell, typename Has>
void AppendSweepArgs(const SweepLists& l, const Spell& spell, const Has& has,
                     std::vector<std::string>* out, std::optional<std::string>* unsupported) {
  std::vector<std::string>& argv = *out;
  std::vector<std::string> ck, cv, fa;
  for (uint32_t t : l.ck.values()) ck.push_back(GgmlTypeName(t));
  for (uint32_t t : l.cv.values()) cv.push_back(GgmlTypeName(t));
  for (FlashAttn f : l.fa.values()) fa.emplace_back(FlashAttnName(f));
  argv.insert(argv.end(), {spell(FlagId::kThreads), Join(l.t.values()), spell(FlagId::kUbatch),
                           Join(l.ub.values()), spell(FlagId::kBatch), Join(l.b.values())});
  if (l.d.size() > 1 || l.d.values().front() != 0) {
    if (!has(FlagId::kDepth))
      *unsupported =
          "this llama-bench has no -d/--n-depth flag (depth tests need a newer llama.cpp)";
    argv.insert(argv.end(), {spell(FlagId::kDepth), Join(l.d.values())});
  }
  argv.insert(argv.end(),
              {spell(FlagId::kCacheTypeK), Join(ck), spell(FlagId::kCacheTypeV), Join(cv)});
  if (!fa.front().empty()) argv.insert(argv.end(), {spell(FlagId::kFlashAttn), Join(fa)});
  // -p and -n default to 512 and 128: always pass them (0 = no such test).
  argv.insert(argv.end(),
              {spell(FlagId::kNPrompt), l.prompts.size() == 0 ? "0" : Join(l.prompts.values()),
               spell(FlagId::kNGen), l.gens.size() == 0 ? "0" : Join(l.gens.values())});
  for (const auto& [pp, n] : l.pgs.values()) {
    argv.insert(argv.end(), {spell(FlagId::kPromptGen), fmt::format("{},{}", pp, n)});
  }
}

}  // namespace

std::string CpuMoeOverride(int n_cpu_moe) {
  std::vector<std::string> parts;
  parts.reserve(static_cast<size_t>(std::max(n_cpu_moe, 0)));
  for (int i = 0; i < n_cpu_moe; ++i)
    parts.push_back(fmt::format("blk\\.{}\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU", i));
  return Join(parts);
}

LlamaBenchEngine::LlamaBenchEngine(EngineInfo info, LlamaBenchOptions options)
    : info_(std::move(info)), options_(std::move(options)) {}

std::vector<std::string> LlamaBenchEngine::BuildArgv(
    const std::vector<const RunConfig*>& group, std::optional<std::string>* unsupported) const {
  const RunConfig& first = *group.front();
  const bool known = !info_.bench_flags.empty();  // flags unknown: trust the defaults
  // Every spelling from the one vocabulary (config/flags.h), as llama-bench writes it.
  auto spell = [](FlagId id) { return std::string(Flag(id).SpellingFor(kToolBench)); };
  auto has = [&](FlagId id) { return !known || info_.HasBenchFlag(spell(id)); };
  std::vector<std::string> argv = {info_.ToolPath("llama-bench"), spell(FlagId::kModel),
                                   first.model, spell(FlagId::kOutput), "jsonl"};
  if (has(FlagId::kProgress)) argv.push_back(spell(FlagId::kProgress));
  if (options_.count_loads) argv.push_back(spell(FlagId::kVerbose));
  argv.insert(argv.end(), {spell(FlagId::kRepetitions), std::to_string(first.repetitions)});
  if (!first.warmup) argv.push_back(spell(FlagId::kNoWarmup));
  // Placement is always explicit: -ngl and -ncmoe are passed even at their
  // defaults, and automatic fitting is never requested (no -fitt), so the
  // engine measures exactly the placement asked for.
  const Placement& p = first.placement;
  argv.insert(argv.end(), {spell(FlagId::kGpuLayers), std::to_string(p.n_gpu_layers)});
  std::vector<OverrideRule> rules = p.Rules();
  const int ncmoe = std::max(0, p.WrittenNCpuMoe());
  if (has(FlagId::kNCpuMoe)) {
    argv.insert(argv.end(), {spell(FlagId::kNCpuMoe), std::to_string(ncmoe)});
  } else if (ncmoe > 0) {
    const auto moe = ParseTensorOverrides(CpuMoeOverride(ncmoe));
    if (moe.ok()) rules.insert(rules.end(), moe->begin(), moe->end());
  }
  if (!rules.empty()) {
    if (!has(FlagId::kOverrideTensor))
      *unsupported = "this llama-bench has no -ot/--override-tensor flag";
    // llama-bench reads ',' as "another test" and ';' as "another rule": the
    // rules of one placement go as one alternative, patterns without ',' or ';'.
    Result<std::string> value = OverridesForBench(rules);
    if (value.ok()) {
      argv.insert(argv.end(), {spell(FlagId::kOverrideTensor), *value});
    } else {
      *unsupported = value.error().message();
    }
  }
  if (first.load_mode != LoadMode::kDefault) {
    if (!has(FlagId::kLoadMode)) *unsupported = "this llama-bench has no -lm/--load-mode flag";
    argv.insert(argv.end(), {spell(FlagId::kLoadMode), LoadModeName(first.load_mode)});
  }
  if (!first.rpc.empty()) {
    if (!has(FlagId::kRpc)) *unsupported = "this llama-bench has no --rpc flag (no RPC backend)";
    argv.insert(argv.end(), {spell(FlagId::kRpc), Join(first.rpc)});
  }
  if (!p.devices.empty()) {
    // llama-bench separates one test's devices and shares with '/' (',' would
    // be another test): -dev RPC0/RPC1 -ts 20/29.
    std::string dev, ts;
    for (const DevicePlacement& d : p.devices) {
      dev += (dev.empty() ? "" : "/") + d.device;
      ts += (ts.empty() ? "" : "/") + std::to_string(d.layers);
    }
    if (!has(FlagId::kDevice) || !has(FlagId::kTensorSplit))
      *unsupported = "this llama-bench has no -dev/-ts flags";
    argv.insert(argv.end(), {spell(FlagId::kDevice), dev, spell(FlagId::kTensorSplit), ts});
  }

  AppendSweepArgs(ListsOf(group), spell, has, &argv, unsupported);
  return argv;
}

std::vector<LlamaBenchEngine::Invocation> LlamaBenchEngine::PlanInvocations(
    const std::vector<RunConfig>& configs) const {
  // Unique configurations, grouped by model key in first-appearance order.
  const std::vector<std::size_t> first_of = FirstOfEach(configs);
  std::vector<std::string> model_keys;
  std::unordered_map<std::string, std::vector<std::size_t>> by_model;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (first_of[i] != i) continue;
    const std::string key = configs[i].ModelKey();
    auto [it, inserted] = by_model.try_emplace(key);
    if (inserted) model_keys.push_back(key);
    it->second.push_back(i);
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
      auto [it, inserted] = tests.try_emplace(k);
      if (inserted) ctx_order.push_back(k);
      it->second.insert({configs[i].n_prompt, configs[i].n_gen});
      ctx_members[k].push_back(i);
    }
    // Context keys with the same test set may share a process if they form a grid.
    std::vector<std::vector<ContextKey>> partitions;
    std::map<std::set<TestKey>, std::size_t> partition_of;
    for (const auto& k : ctx_order) {
      auto [it, inserted] = partition_of.try_emplace(tests[k], partitions.size());
      if (inserted) partitions.emplace_back();
      partitions[it->second].push_back(k);
    }
    std::vector<std::vector<ContextKey>> groups;
    for (auto& part : partitions) {
      if (IsGrid(part)) {
        groups.push_back(std::move(part));
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
      // In the order llama-bench runs them, so that "benchmark k/n" names the
      // k-th of them and results line up with them.
      const SweepLists lists = ListsOf(ptrs);
      std::vector<std::pair<std::vector<std::size_t>, std::size_t>> keyed;
      keyed.reserve(inv.configs.size());
      for (std::size_t i : inv.configs) keyed.emplace_back(EngineOrder(configs[i], lists), i);
      std::sort(keyed.begin(), keyed.end());
      for (std::size_t k = 0; k < keyed.size(); ++k) inv.configs[k] = keyed[k].second;
      out.push_back(std::move(inv));
    }
  }
  return out;
}

namespace {

// Each configuration of `inv_configs` that has neither a result nor a
// failure yet fails with `f`.
void FailAll(const EngineFailure& f, const std::vector<std::size_t>& inv_configs, int inv_index,
             BenchRun* run) {
  for (std::size_t i : inv_configs) {
    if (run->results[i].ok() && run->results[i].record.is_null()) {
      run->results[i].failure = f;
      run->results[i].invocation = inv_index;
    }
  }
}

// An invocation that could not start: it and its configurations fail with `f`.
void NotStarted(const EngineFailure& f, InvocationReport rep, BenchRun* run) {
  rep.failure = f;
  rep.exit = "not started";
  FailAll(f, rep.configs, static_cast<int>(run->invocations.size()), run);
  run->invocations.push_back(std::move(rep));
}

// The results of an invocation stored with the configurations they answer
// (in `inv_configs`' order first, else any that matches); which were answered.
std::vector<bool> StoreRecords(std::vector<BenchRecord>* records,
                               const std::vector<std::size_t>& inv_configs,
                               const std::vector<RunConfig>& configs, int inv_index,
                               BenchRun* run) {
  std::vector<bool> taken(inv_configs.size(), false);
  std::size_t next = 0;  // results arrive in inv_configs' order; look there first
  for (auto& r : *records) {
    std::size_t k = next;
    if (k >= inv_configs.size() || taken[k] || !RecordMatches(r, configs[inv_configs[k]])) {
      k = 0;
      while (k < inv_configs.size() && (taken[k] || !RecordMatches(r, configs[inv_configs[k]]))) {
        ++k;
      }
      if (k == inv_configs.size()) continue;  // a result nobody asked for
    }
    taken[k] = true;
    next = k + 1;
    RunResult& res = run->results[inv_configs[k]];
    res.avg_ts = r.avg_ts;
    res.stddev_ts = r.stddev_ts;
    res.samples_ts = r.samples_ts;
    res.samples_ns = r.samples_ns;
    res.record = std::move(r.raw);
    res.invocation = inv_index;
    if (run->backends.empty()) run->backends = r.backends;
  }
  return taken;
}

// Why an engine that exited normally left configurations without a result.
std::string NoResultMessage(const std::vector<bool>& taken, const std::vector<std::string>& bad) {
  return bad.empty() ? fmt::format(
                           "the engine exited normally but printed no result for {} of {} "
                           "configuration(s)",
                           std::count(taken.begin(), taken.end(), false), taken.size())
                     : fmt::format("unparseable output from the engine: {}", bad.front());
}

// How an invocation that left configurations without a result failed.
EngineFailure InvocationFailure(const RunOutput& out, double limit, const LogTail& log,
                                const std::vector<bool>& taken, const std::vector<std::string>& bad,
                                const std::vector<std::string>& rpc_hosts) {
  EngineFailure f = ClassifyFailure(out.status, out.timed_out, limit, log.kept(), log.tail());
  if (f.kind == FailureKind::kUnparseable) f.message = NoResultMessage(taken, bad);
  // Which RPC host, when one failed (the engine rarely says).
  AttributeRpcFailure(rpc_hosts, &f);
  return f;
}

// RPC hosts are checked before each invocation that uses them: one that does
// not answer fails its configurations at once, by name, instead of the engine
// waiting minutes on its connection (rpc_host.h).
std::optional<EngineFailure> RpcHostsNotReady(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return std::nullopt;
  const auto bad = FirstFailingRpcHost(hosts);
  if (!bad) return std::nullopt;
  EngineFailure f{FailureKind::kRpcHost, DescribeRpcHostProblem(*bad), "not started", {}};
  f.rpc_host = bad->endpoint;
  return f;
}

}  // namespace

// Where a Run stands, for its progress callback.
struct LlamaBenchEngine::RunProgress {
  const ProgressCallback& progress;
  std::chrono::steady_clock::time_point start;
  BenchProgress p;
  std::size_t tests_done = 0;
  /// When the caller's time limit ends (Engine::set_time_limit).
  std::optional<std::chrono::steady_clock::time_point> deadline;

  bool PastDeadline() const { return deadline && std::chrono::steady_clock::now() >= *deadline; }
  /// Shortens `*timeout` to the time left before the deadline; true when the
  /// deadline is the shorter (a timeout then means the limit ended the run).
  bool CapAtDeadline(std::optional<std::chrono::milliseconds>* timeout) const {
    if (!deadline) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *deadline - std::chrono::steady_clock::now());
    if (*timeout && left >= **timeout) return false;
    *timeout = std::max(left, std::chrono::milliseconds(1));
    return true;
  }

  void Report(const std::string& current) {
    if (!progress) return;
    p.tests_done = tests_done;
    p.elapsed_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    p.current = current;
    progress(p);
  }
};

void LlamaBenchEngine::RunInvocation(const Invocation& inv, const std::vector<RunConfig>& configs,
                                     RunProgress* st, BenchRun* run) const {
  InvocationReport rep;
  rep.argv = inv.argv;
  rep.configs = inv.configs;
  const int inv_index = static_cast<int>(run->invocations.size());
  RunOptions o;
  o.spawn.argv = inv.argv;
  o.spawn.env_set = options_.env;
  o.timeout =
      options_.timeout_per_test * static_cast<long>(inv.configs.size()) + options_.load_allowance;
  // The caller's time limit (a tune's budget) ends the process sooner.
  const bool limited = st->CapAtDeadline(&o.timeout);
  o.capture_stdout = true;
  o.stderr_tail_lines = 0;
  LogTail log(kTailLines, IsNoiseLine, IsDiagnosticLine, kMaxDiagnostics);
  int loads = 0;
  std::size_t done_here = 0;
  const std::size_t done_before = st->tests_done;
  std::string current;
  o.on_stderr_line = [&](std::string_view line) {
    if (IsNoiseLine(line)) return;
    if (line.find("llama_model_loader: loaded meta data") != std::string_view::npos) ++loads;
    log.Add(line);
    if (options_.on_engine_line) options_.on_engine_line(line);
    if (const auto pl = ParseBenchProgressLine(line)) {
      // inv.configs is in llama-bench's own order (PlanInvocations).
      if (pl->index - 1 < inv.configs.size()) {
        current =
            fmt::format("{}: {}", ProgressLabel(configs[inv.configs[pl->index - 1]]), pl->what);
      }
      st->tests_done = done_before + std::min(done_here, inv.configs.size());
      st->Report(current);
    }
  };
  o.on_stdout_line = [&](std::string_view line) {
    if (!line.empty() && line.front() == '{') {
      ++done_here;
      st->tests_done = done_before + std::min(done_here, inv.configs.size());
      st->Report(current);
    }
  };
  st->Report("starting " + std::to_string(inv.configs.size()) + " test(s)");
  // What else ran meanwhile: a result taken on a busy machine is marked.
  LoadMeter load;
  load.Start();
  auto out = RunProcess(o);
  if (const auto l = load.Stop()) rep.other_cpu_cores = l->other_cores;
  if (!out.ok()) {
    EngineFailure f{out.error().kind() == ErrorKind::kNotFound ? FailureKind::kEngineMissing
                                                               : FailureKind::kEngineError,
                    out.error().message() +
                        "; install the engine (scripts/setup-engine.sh) or pass --llama-dir",
                    "not started",
                    {}};
    NotStarted(f, std::move(rep), run);
    st->tests_done = done_before + inv.configs.size();
    return;
  }
  rep.wall_seconds = out->wall_seconds;
  rep.exit = out->status.Describe();
  rep.timed_out = out->timed_out;
  rep.time_limit_reached = out->timed_out && limited;
  rep.model_loads = options_.count_loads ? loads : -1;

  std::vector<std::string> bad;
  auto records = ParseBenchJsonl(out->stdout_text, &bad);
  const std::vector<bool> taken = StoreRecords(&records, inv.configs, configs, inv_index, run);
  const bool all_taken = std::all_of(taken.begin(), taken.end(), [](bool x) { return x; });
  if (!all_taken || !out->status.success() || out->timed_out) {
    const double limit = std::chrono::duration<double>(*o.timeout).count();
    const EngineFailure f =
        InvocationFailure(*out, limit, log, taken, bad, configs[inv.configs.front()].rpc);
    rep.failure = f;
    FailAll(f, inv.configs, inv_index, run);
  }
  st->tests_done = done_before + inv.configs.size();
  for (std::size_t i : inv.configs) run->results[i].other_cpu_cores = rep.other_cpu_cores;
  run->invocations.push_back(std::move(rep));
}

BenchRun LlamaBenchEngine::Run(const std::vector<RunConfig>& configs,
                               const ProgressCallback& progress) {
  BenchRun run;
  run.results.resize(configs.size());
  for (std::size_t i = 0; i < configs.size(); ++i) run.results[i].config = configs[i];
  const auto plan = PlanInvocations(configs);
  RunProgress st{progress, std::chrono::steady_clock::now(), {}, 0, std::nullopt};
  if (time_limit()) {
    st.deadline = st.start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(std::max(0.0, *time_limit())));
  }
  for (const auto& inv : plan) st.p.tests_total += inv.configs.size();
  st.p.invocations_total = plan.size();
  for (std::size_t n = 0; n < plan.size(); ++n) {
    st.p.invocation = n + 1;
    const Invocation& inv = plan[n];
    const bool past = !inv.unsupported && st.PastDeadline();
    const auto no_host =
        inv.unsupported || past ? std::nullopt : RpcHostsNotReady(configs[inv.configs.front()].rpc);
    if (inv.unsupported || past || no_host) {
      // Not started: the engine cannot express it, no time is left (which
      // says nothing about the configurations), or an RPC host does not answer.
      InvocationReport rep;
      rep.argv = inv.argv;
      rep.configs = inv.configs;
      rep.time_limit_reached = past;
      NotStarted(
          no_host ? *no_host
          : inv.unsupported
              ? EngineFailure{FailureKind::kInvalidConfig, *inv.unsupported, "not started", {}}
              : EngineFailure{FailureKind::kTimeout,
                              "not started: the time limit was reached",
                              "not started",
                              {}},
          std::move(rep), &run);
      st.tests_done += inv.configs.size();
      st.Report("");
      continue;
    }
    RunInvocation(inv, configs, &st, &run);
  }
  // Duplicates of a configuration share the first one's result.
  const std::vector<std::size_t> first_of = FirstOfEach(configs);
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (first_of[i] != i) run.results[i] = run.results[first_of[i]];
  }
  st.Report("");
  return run;
}

}  // namespace moetune
