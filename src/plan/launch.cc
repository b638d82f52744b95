#include "plan/launch.h"

#include <fmt/format.h>

#include "gguf/ggml_type.h"

namespace moetune {

std::string OverrideValue(int layer, const std::vector<std::string>& kinds) {
  std::string alt;
  for (size_t i = 0; i < kinds.size(); ++i) alt += (i ? "|" : "") + kinds[i];
  return fmt::format("blk\\.{}\\.({})=CPU", layer, alt);
}

std::vector<std::string> MemoryShapingFlags(const LaunchConfig& c) {
  const WeightPlacement& p = c.placement;
  std::vector<std::string> f = {"-ngl", std::to_string(p.n_gpu_layers)};
  if (c.moe) f.insert(f.end(), {"--n-cpu-moe", std::to_string(p.n_cpu_moe)});
  if (p.override_layer >= 0 && !p.override_kinds.empty())
    f.insert(f.end(), {"-ot", OverrideValue(p.override_layer, p.override_kinds)});
  const ContextParams& x = c.ctx;
  f.insert(f.end(), {"-c", std::to_string(x.n_ctx), "-np", std::to_string(x.n_seq)});
  if (x.kv_unified && x.n_seq > 1) f.push_back("-kvu");
  f.insert(f.end(), {"-ub", std::to_string(x.n_ubatch), "-b", std::to_string(x.n_batch), "-fa",
                     x.flash_attn ? "on" : "off"});
  if (x.type_k != ggml_type::kF16) f.insert(f.end(), {"-ctk", GgmlTypeName(x.type_k)});
  if (x.type_v != ggml_type::kF16) f.insert(f.end(), {"-ctv", GgmlTypeName(x.type_v)});
  return f;
}

std::vector<std::string> ServerArgs(const std::string& model_path, const LaunchConfig& config) {
  std::vector<std::string> a = {"llama-server", "-m", model_path};
  const auto flags = MemoryShapingFlags(config);
  a.insert(a.end(), flags.begin(), flags.end());
  a.insert(a.end(), {"-fit", "off"});
  return a;
}

std::string ShellJoin(const std::vector<std::string>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& s = args[i];
    if (i) out += ' ';
    const bool plain =
        !s.empty() &&
        s.find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
            std::string::npos;
    if (plain) {
      out += s;
      continue;
    }
    out += '\'';
    for (char c : s) {
      if (c == '\'')
        out += "'\\''";
      else
        out += c;
    }
    out += '\'';
  }
  return out;
}

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
