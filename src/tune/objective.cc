#include "tune/objective.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

namespace moetune {

double Workload::SecondsPerRequest(double prefill_tps, double decode_tps) const {
  const double inf = std::numeric_limits<double>::infinity();
  double t = 0;
  if (prompt_tokens > 0) t += prefill_tps > 0 ? prompt_tokens / prefill_tps : inf;
  if (answer_tokens > 0) t += decode_tps > 0 ? answer_tokens / decode_tps : inf;
  return t;
}

Result<Workload> ParseWorkload(std::string_view text) {
  if (text == "chat") return Workload{"chat", 1024, 384};
  if (text == "agent") return Workload{"agent", 8192, 256};
  const auto bad = [&] {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("--workload '{}': use chat, agent, or PROMPT:ANSWER token counts "
                             "such as 4000:500 (each 0 to 1048576, not both 0)",
                             text));
  };
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return bad();
  int p = -1, a = -1;
  const auto ps = text.substr(0, colon), as = text.substr(colon + 1);
  auto rp = std::from_chars(ps.data(), ps.data() + ps.size(), p);
  auto ra = std::from_chars(as.data(), as.data() + as.size(), a);
  if (rp.ec != std::errc() || rp.ptr != ps.data() + ps.size() || ra.ec != std::errc() ||
      ra.ptr != as.data() + as.size() || p < 0 || a < 0 || p > 1048576 || a > 1048576 ||
      p + a == 0) {
    return bad();
  }
  return Workload{std::string(text), p, a};
}

}  // namespace moetune
