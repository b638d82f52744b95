#include "engine/run_config.h"

#include <fmt/format.h>

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
  // --no-warmup, which apply to a whole invocation.
  return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", model, placement.n_gpu_layers,
                     placement.n_cpu_moe, placement.override_tensor, load_mode, repetitions,
                     warmup ? 1 : 0, rpc);
}

std::tuple<int, int, int, int, std::string, std::string, std::string> RunConfig::ContextKey()
    const {
  return {threads,          placement.n_ubatch, placement.n_batch,   n_depth,
          placement.type_k, placement.type_v,   placement.flash_attn};
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
