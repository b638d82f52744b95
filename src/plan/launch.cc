#include "plan/launch.h"

#include <fmt/format.h>

namespace moetune {

std::string SlotContextText(const ContextParams& ctx) {
  auto layout = LayoutContext(ctx);
  if (!layout.ok()) return "invalid context";
  if (ctx.n_seq == 1) return fmt::format("1 slot x {} tokens", layout->n_ctx_seq);
  if (layout->unified)
    return fmt::format("{} slots sharing one {}-token cache (-kvu)", ctx.n_seq, layout->n_ctx);
  return fmt::format("{} slots x {} tokens, one cache per slot (no -kvu)", ctx.n_seq,
                     layout->n_ctx_seq);
}

}  // namespace moetune
