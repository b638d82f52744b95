#include "engine/run_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace moetune {

std::string TestName(int n_prompt, int n_gen, int n_depth) {
  std::string name;
  if (n_prompt > 0 && n_gen > 0) {
    name = fmt::format("pp{}+tg{}", n_prompt, n_gen);
  } else if (n_gen > 0) {
    name = fmt::format("tg{}", n_gen);
  } else {
    name = fmt::format("pp{}", n_prompt);
  }
  if (n_depth > 0) name += fmt::format(" @ d{}", n_depth);
  return name;
}

TestKind RunConfig::kind() const {
  if (n_prompt > 0 && n_gen > 0) return TestKind::kPrefillDecode;
  return n_gen > 0 ? TestKind::kDecode : TestKind::kPrefill;
}

std::string RunConfig::ModelKey() const {
  // Mirrors llama-bench's cmd_params_instance::equal_mparams (tools/llama-bench/
  // llama-bench.cpp): model, n_gpu_layers, n_cpu_moe, tensor_buft_overrides,
  // load mode, rpc servers (they change the devices)... plus -r and
  // --no-warmup, which apply to a whole invocation. The -ot rules and the load
  // mode in the form they are written (so that keys of older journals match).
  std::string rpc_hosts;
  for (const auto& h : rpc) rpc_hosts += (rpc_hosts.empty() ? "" : ",") + h;
  std::string key =
      fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", model, placement.n_gpu_layers,
                  placement.n_cpu_moe, placement.OverrideTensor(), LoadModeName(load_mode),
                  repetitions, warmup ? 1 : 0, rpc_hosts);
  // -dev and -ts (only when given, so that keys of one-device journals stay as they were).
  for (const DevicePlacement& d : placement.devices)
    key += fmt::format("\x1f{}={}", d.device, d.layers);
  return key;
}

std::tuple<int, int, int, int, uint32_t, uint32_t, FlashAttn> RunConfig::ContextKey() const {
  return {threads, n_ubatch, n_batch, n_depth, type_k, type_v, flash_attn};
}

ServerConfig BenchPart(const ServerConfig& config) {
  ServerConfig c = config;
  c.ctx_size = 0;
  c.n_parallel = -1;
  c.kv_unified = Switch::kDefault;
  c.fit = Switch::kDefault;
  c.host.clear();
  c.port = 0;
  c.metrics = false;
  c.placement.n_cpu_moe = std::max(0, c.placement.n_cpu_moe);
  return c;
}

Result<uint64_t> CheckSweepSize(const std::vector<SweepDimension>& dims) {
  uint64_t product = 1;
  bool overflow = false;
  std::vector<std::string> parts;
  for (const auto& d : dims) {
    if (d.values > 1) parts.push_back(fmt::format("{} ({})", d.flag, d.values));
    overflow =
        overflow || __builtin_mul_overflow(product, static_cast<uint64_t>(d.values), &product);
  }
  if (overflow || product > kMaxSweepConfigs) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("the sweep has {} configurations ({}); at most {} are run in one "
                             "bench: shorten the lists",
                             overflow ? std::string("more than 18446744073709551615")
                                      : std::to_string(product),
                             fmt::join(parts, " x "), kMaxSweepConfigs));
  }
  return product;
}

namespace {

Result<int> ParseInt(std::string_view item, std::string_view whole) {
  if (item.empty())
    return Error(ErrorKind::kInvalidArgument, fmt::format("empty item in list '{}'", whole));
  int64_t v = 0;
  std::size_t i = 0;
  const bool neg = item[0] == '-';
  if (neg) i = 1;
  if (i == item.size())
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' in '{}' is not a number", item, whole));
  for (; i < item.size(); ++i) {
    if (item[i] < '0' || item[i] > '9' || v > 1000000000) {
      return Error(
          ErrorKind::kInvalidArgument,
          fmt::format("'{}' in '{}' is not a number (use 1,2,4 or ranges 1-8, 0-8+2, 1-16*2)", item,
                      whole));
    }
    v = v * 10 + (item[i] - '0');
  }
  // At most 10 digits were read, so v fits; the int it becomes must too
  // ("-t 9999999999" wrapped to 1410065407 threads, "-ngl 4294967297" to 1).
  if (v > INT32_MAX) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("'{}' in '{}' is too large (at most {})", item, whole, INT32_MAX));
  }
  return static_cast<int>(neg ? -v : v);
}

}  // namespace

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t c = text.find(',', start);
    if (c == std::string_view::npos) c = text.size();
    out.emplace_back(text.substr(start, c - start));
    start = c + 1;
  }
  return out;
}

Result<std::vector<int>> ParseIntList(std::string_view text) {
  std::vector<int> out;
  for (const std::string& item : SplitList(text)) {
    // A range "a-b" has its dash after the first character (so "-1" is a number).
    const std::size_t dash = item.find('-', 1);
    if (dash == std::string::npos) {
      MOETUNE_ASSIGN_OR_RETURN(const int v, ParseInt(item, text));
      out.push_back(v);
      continue;
    }
    MOETUNE_ASSIGN_OR_RETURN(const int first,
                             ParseInt(std::string_view(item).substr(0, dash), text));
    std::string_view rest = std::string_view(item).substr(dash + 1);
    char op = '+';
    int step = 1;
    if (const std::size_t o = rest.find_first_of("+*"); o != std::string_view::npos) {
      op = rest[o];
      MOETUNE_ASSIGN_OR_RETURN(step, ParseInt(rest.substr(o + 1), text));
      rest = rest.substr(0, o);
    }
    MOETUNE_ASSIGN_OR_RETURN(const int last, ParseInt(rest, text));
    if ((op == '+' && step <= 0) || (op == '*' && (step <= 1 || first <= 0)) || last < first) {
      return Error(
          ErrorKind::kInvalidArgument,
          fmt::format(
              "range '{}' in '{}' is empty or never ends (need first <= last and a step that "
              "grows)",
              item, text));
    }
    for (int64_t v = first; v <= last; v = op == '+' ? v + step : v * step) {
      out.push_back(static_cast<int>(v));
      if (out.size() > 10000)
        return Error(ErrorKind::kInvalidArgument, fmt::format("list '{}' is too long", text));
    }
  }
  return out;
}

}  // namespace moetune
