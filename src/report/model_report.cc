#include "report/model_report.h"

#include <fmt/format.h>

#include <optional>

#include "gguf/ggml_type.h"
#include "model/compute_buffers.h"
#include "util/table.h"
#include "util/units.h"
#include "util/utf8.h"

namespace moetune {
namespace {

using nlohmann::json;

constexpr TensorRole kLayerRoles[] = {TensorRole::kAttention,     TensorRole::kRoutedExperts,
                                      TensorRole::kSharedExperts, TensorRole::kRouter,
                                      TensorRole::kDenseFfn,      TensorRole::kRecurrent,
                                      TensorRole::kNorm,          TensorRole::kOther};

json RolesJson(const RoleBytes& rb) {
  json j = json::object();
  for (int r = 0; r < kTensorRoleCount; ++r) {
    if (rb[static_cast<size_t>(r)] != 0)
      j[TensorRoleName(static_cast<TensorRole>(r))] = rb[static_cast<size_t>(r)];
  }
  return j;
}

std::string LayerKind(const LayerInfo& l) {
  std::string k = AttentionKindName(l.attention);
  if (l.window) k += fmt::format("({})", l.window);
  return k + (l.moe ? " moe" : " dense");
}

std::string Mib(int64_t b) { return FormatMiB(Bytes(b), 1); }

ContextParams CtxAt(int64_t n_ctx) {
  ContextParams cp;
  cp.n_ctx = n_ctx;
  return cp;
}

// Context memory and the all-host compute buffer of one context (null fields
// when the context is invalid or the sizes overflow).
struct CtxFigures {
  std::optional<ContextMemory> memory;
  std::optional<int64_t> compute;
};

CtxFigures Figures(const ModelInfo& m, int64_t n_ctx) {
  CtxFigures f;
  const ContextParams cp = CtxAt(n_ctx);
  if (auto cm = ComputeContextMemory(m.arch, cp); cm.ok()) f.memory = std::move(cm).value();
  if (auto c = EstimateHostOnlyCompute(m.gguf, m.arch, cp); c.ok()) f.compute = *c;
  return f;
}

int64_t StatePerSequence(const ModelInfo& m) {
  auto cm = ComputeContextMemory(m.arch, CtxAt(256));
  return cm.ok() ? cm->state_bytes : 0;
}

}  // namespace

std::vector<int64_t> DefaultInspectContexts() { return {4096, 8192, 32768, 131072}; }

json InspectJson(const ModelInfo& m, const std::vector<int64_t>& contexts) {
  const Hparams& hp = m.arch.hp;
  json j;
  j["path"] = m.path;
  j["parts"] = m.gguf.parts.size();
  j["file_bytes"] = m.gguf.file_bytes();
  j["tensor_count"] = m.gguf.tensors.size();
  j["architecture"] = hp.arch;
  j["known_architecture"] = m.arch.known_arch;
  j["name"] = hp.name;
  j["hparams"] = {{"n_layer", hp.n_layer},
                  {"n_embd", hp.n_embd},
                  {"n_vocab", hp.n_vocab},
                  {"n_ctx_train", hp.n_ctx_train},
                  {"n_expert", hp.n_expert},
                  {"n_expert_used", hp.n_expert_used},
                  {"n_expert_shared", hp.n_expert_shared},
                  {"n_ff_exp", hp.n_ff_exp},
                  {"n_embd_head_k", hp.n_embd_head_k},
                  {"n_embd_head_v", hp.n_embd_head_v},
                  {"n_swa", hp.n_swa},
                  {"full_attention_interval", hp.full_attention_interval},
                  {"leading_dense", hp.leading_dense},
                  {"nextn_layers", hp.nextn_layers},
                  {"ssm_d_conv", hp.ssm_d_conv},
                  {"ssm_d_inner", hp.ssm_d_inner},
                  {"ssm_d_state", hp.ssm_d_state},
                  {"ssm_n_group", hp.ssm_n_group},
                  {"kv_lora_rank", hp.kv_lora_rank}};
  j["warnings"] = m.arch.warnings;
  json w;
  w["total_bytes"] = m.weights.total;
  w["expert_bytes"] = m.weights.expert_total();
  w["bytes_per_token"] = m.weights.bytes_per_token;
  w["global"] = RolesJson(m.weights.global);
  json by_role = json::object();
  for (int r = 0; r < kTensorRoleCount; ++r) {
    const int64_t b = m.weights.by_role(static_cast<TensorRole>(r));
    if (b) by_role[TensorRoleName(static_cast<TensorRole>(r))] = b;
  }
  w["by_role"] = by_role;
  j["weights"] = w;
  json layers = json::array();
  for (size_t i = 0; i < m.arch.layers.size(); ++i) {
    const LayerInfo& l = m.arch.layers[i];
    const LayerWeights& lw = m.weights.layers[i];
    layers.push_back({{"layer", l.index},
                      {"attention", AttentionKindName(l.attention)},
                      {"window", l.window},
                      {"moe", l.moe},
                      {"n_head", l.n_head},
                      {"n_head_kv", l.n_head_kv},
                      {"n_embd_k_gqa", l.n_embd_k_gqa},
                      {"n_embd_v_gqa", l.n_embd_v_gqa},
                      {"bytes", RolesJson(lw.bytes)},
                      {"total_bytes", lw.total()},
                      {"expert_bytes", lw.experts()}});
  }
  j["layers"] = layers;
  j["kv_bytes_per_token_f16"] = KvBytesPerToken(m.arch);
  j["recurrent_state_bytes_per_sequence"] = StatePerSequence(m);
  json ctx = json::array();
  for (int64_t c : contexts) {
    const CtxFigures f = Figures(m, c);
    ctx.push_back({{"n_ctx", c},
                   {"n_ctx_padded", f.memory ? json(f.memory->n_ctx_padded) : json(nullptr)},
                   {"kv_bytes", f.memory ? json(f.memory->kv_bytes) : json(nullptr)},
                   {"state_bytes", f.memory ? json(f.memory->state_bytes) : json(nullptr)},
                   {"compute_bytes_estimate", f.compute ? json(*f.compute) : json(nullptr)}});
  }
  j["contexts"] = ctx;
  return j;
}

namespace {

// "layers: N (M MoE, D dense); attention: ..." for inspect's text.
std::string LayersLine(const ModelArch& arch, uint32_t n_layer) {
  int moe = 0, n_full = 0, n_swa = 0, n_rec = 0, n_mla = 0, n_none = 0;
  for (const auto& l : arch.layers) {
    moe += l.moe;
    switch (l.attention) {
      case AttentionKind::kFull:
        ++n_full;
        break;
      case AttentionKind::kSlidingWindow:
      case AttentionKind::kChunked:
        ++n_swa;
        break;
      case AttentionKind::kRecurrent:
        ++n_rec;
        break;
      case AttentionKind::kMla:
        ++n_mla;
        break;
      case AttentionKind::kNone:
        ++n_none;
        break;
    }
  }
  return fmt::format(
      "layers:       {} ({} MoE, {} dense); attention: {} full, {} windowed, {} recurrent, {} MLA, "
      "{} none\n",
      n_layer, moe, n_layer - moe, n_full, n_swa, n_rec, n_mla, n_none);
}

}  // namespace

std::string InspectText(const ModelInfo& m, const std::vector<int64_t>& contexts) {
  const Hparams& hp = m.arch.hp;
  std::string o;
  // Names from the file (and the path) are one value each: never a line of their own.
  o += fmt::format("model:        {}{}\n", ForTerminalField(m.path),
                   m.gguf.parts.size() > 1 ? fmt::format(" ({} parts)", m.gguf.parts.size()) : "");
  o += fmt::format("architecture: {}{}{}\n", hp.arch.empty() ? "(none)" : ForTerminalField(hp.arch),
                   hp.name.empty() ? "" : "  \"" + ForTerminalField(hp.name) + "\"",
                   m.arch.known_arch ? "" : "  [unknown: inferred]");
  o += LayersLine(m.arch, hp.n_layer);
  o += fmt::format(
      "shape:        hidden {}, vocab {}, heads {}/{} x {}, experts {}/{} used (+{} shared), "
      "expert FFN {}\n",
      hp.n_embd, hp.n_vocab, m.arch.layers.empty() ? 0 : m.arch.layers.back().n_head,
      m.arch.layers.empty() ? 0 : m.arch.layers.back().n_head_kv, hp.n_embd_head_k,
      hp.n_expert_used, hp.n_expert, hp.n_expert_shared, hp.n_ff_exp);
  o += fmt::format(
      "weights:      {} in {} tensors; routed experts {} ({:.1f}%); read per token {}\n",
      FormatBytes(Bytes(m.weights.total)), m.gguf.tensors.size(),
      FormatBytes(Bytes(m.weights.expert_total())),
      m.weights.total ? 100.0 * static_cast<double>(m.weights.expert_total()) /
                            static_cast<double>(m.weights.total)
                      : 0.0,
      FormatBytes(Bytes(m.weights.bytes_per_token)));
  o += fmt::format(
      "KV cache:     {} per token (f16, growing layers); recurrent state {} per sequence\n",
      FormatBytes(Bytes(KvBytesPerToken(m.arch))), FormatBytes(Bytes(StatePerSequence(m))));
  for (const auto& w : m.arch.warnings) o += "warning:      " + w + "\n";

  o += "\nContext memory (f16 KV, 1 sequence, ubatch 512):\n\n";
  MarkdownTable ct({{"context"}, {"KV MiB"}, {"state MiB"}, {"compute MiB"}});
  for (int64_t c : contexts) {
    const CtxFigures f = Figures(m, c);
    ct.AddRow({std::to_string(c), f.memory ? Mib(f.memory->kv_bytes) : "-",
               f.memory ? Mib(f.memory->state_bytes) : "-", f.compute ? Mib(*f.compute) : "-"});
  }
  o += ct.Render();

  o += "\nWeights by layer and role (MiB):\n\n";
  std::vector<MarkdownTable::Column> cols = {{"layer"}, {"kind", MarkdownTable::Align::kLeft}};
  for (TensorRole r : kLayerRoles) cols.push_back({TensorRoleName(r)});
  cols.push_back({"total"});
  MarkdownTable lt(cols);
  for (size_t i = 0; i < m.arch.layers.size(); ++i) {
    std::vector<std::string> row = {std::to_string(i), LayerKind(m.arch.layers[i])};
    for (TensorRole r : kLayerRoles) row.push_back(Mib(At(m.weights.layers[i].bytes, r)));
    row.push_back(Mib(m.weights.layers[i].total()));
    lt.AddRow(row);
  }
  std::vector<std::string> g = {"-", "global"};
  for (TensorRole r : kLayerRoles) g.push_back(Mib(At(m.weights.global, r)));
  g.push_back(Mib(Sum(m.weights.global)));
  lt.AddRow(g);
  o += lt.Render();
  o += fmt::format("\nglobal: token_embd {} MiB (host), output {} MiB\n",
                   Mib(At(m.weights.global, TensorRole::kTokenEmbedding)),
                   Mib(At(m.weights.global, TensorRole::kOutput)));
  return o;
}

namespace {

json DeviceJson(const DeviceBreakdown& d) {
  return {{"weights", RolesJson(d.weights)},
          {"weights_bytes", d.weights_total()},
          {"kv_bytes", d.kv},
          {"state_bytes", d.state},
          {"compute_bytes", d.compute},
          {"total_bytes", d.total()}};
}

}  // namespace

namespace {

// Several devices: each device's part of the plan.
json SharesJson(const std::vector<DeviceShare>& shares) {
  json out = json::array();
  for (const DeviceShare& s : shares) {
    out.push_back({{"device", s.device.name},
                   {"free_bytes", s.device.free},
                   {"reserve_bytes", s.device.reserve},
                   {"layers", s.layers},
                   {"cpu_expert_layers", s.cpu_expert_layers},
                   {"use", DeviceJson(s.use)},
                   {"headroom_bytes", s.headroom},
                   {"fits", s.headroom >= 0}});
  }
  return out;
}

}  // namespace

json PlanJson(const ModelInfo& m, const Plan& plan, const PlanRequest& req) {
  json j;
  j["model"] = m.path;
  j["architecture"] = m.arch.hp.arch;
  j["moe"] = plan.moe;
  j["n_layer"] = plan.n_layer;
  j["request"] = {{"vram_free_bytes", req.vram_free},
                  {"reserve_bytes", req.reserve},
                  {"margin_bytes", req.margin},
                  {"n_ctx", req.ctx.n_ctx},
                  {"n_ubatch", req.ctx.n_ubatch},
                  {"n_batch", req.ctx.n_batch},
                  {"type_k", GgmlTypeName(req.ctx.type_k)},
                  {"type_v", GgmlTypeName(req.ctx.type_v)},
                  {"n_parallel", req.ctx.n_seq},
                  {"kv_unified", req.ctx.kv_unified},
                  {"flash_attn", req.ctx.flash_attn},
                  {"host_ram_available_bytes", req.host_ram_available}};
  // What llama.cpp makes of the request (src/llama-context.cpp).
  j["context"] = {{"n_ctx_cells", plan.layout.n_ctx},  {"n_ctx_per_slot", plan.layout.n_ctx_seq},
                  {"n_slots", plan.layout.n_seq},      {"kv_streams", plan.layout.n_stream},
                  {"kv_unified", plan.layout.unified}, {"n_batch", plan.layout.n_batch},
                  {"n_ubatch", plan.layout.n_ubatch},  {"slots", SlotContextText(req.ctx)}};
  j["budget_bytes"] = plan.budget;
  j["host_only"] = plan.host_only;
  const PlacementOption* best = plan.best();
  j["fits"] = best != nullptr;
  if (plan.moe) {
    j["n_cpu_moe"] = best ? json(best->n_cpu_moe) : json(nullptr);
    j["n_cpu_moe_without_fine_fill"] = plan.smallest_fitting
                                           ? json(plan.options[*plan.smallest_fitting].n_cpu_moe)
                                           : json(nullptr);
  }
  j["ngl"] = best ? json(best->ngl) : json(nullptr);
  json ot = json::array();
  if (plan.fine_filled()) {
    const WeightPlacement& wp = best->placement;
    ot.push_back({{"pattern", OverrideValue(wp.override_layer, wp.override_kinds)},
                  {"layer", wp.override_layer},
                  {"cpu_tensors", wp.override_kinds},
                  {"buffer", "CPU"},
                  {"gpu_bytes_gained", plan.gpu_bytes_gained}});
  }
  j["override_tensors"] = ot;
  // The recommended configuration, exactly as the command runs it.
  j["gpu"] = best ? DeviceJson(best->gpu) : json(nullptr);
  j["host"] = best ? DeviceJson(best->host) : json(nullptr);
  j["headroom_bytes"] = best ? json(best->headroom) : json(nullptr);
  j["shortfall_bytes"] = best ? json(nullptr) : json(plan.shortfall);
  j["host_ram_needed_bytes"] = plan.host_ram_needed;
  j["host_ram_fits"] = plan.host_ram_fits;
  json opts = json::array();
  for (const auto& o : plan.options) {
    opts.push_back({{"n_cpu_moe", o.n_cpu_moe},
                    {"ngl", o.ngl},
                    {"fits", o.fits},
                    {"headroom_bytes", o.headroom},
                    {"gpu", DeviceJson(o.gpu)},
                    {"host", DeviceJson(o.host)}});
  }
  j["options"] = opts;
  j["devices"] = SharesJson(plan.shares);
  if (plan.config) {
    const auto args = ServerArgv(*plan.config);
    j["command"] = ShellJoin(args);
    j["command_argv"] = args;
  } else {
    j["command"] = nullptr;
    j["command_argv"] = nullptr;
  }
  j["notes"] = plan.notes;
  return j;
}

namespace {

// "3-5, 20" for the layers 3, 4, 5 and 20 ("none" when empty).
std::string LayerRanges(const std::vector<int>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") +
           (j == i ? std::to_string(layers[i]) : fmt::format("{}-{}", layers[i], layers[j]));
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

// Several devices: each device's budget, layers, experts on the CPU and memory.
std::string DevicesTable(const Plan& plan) {
  MarkdownTable t({{"device", MarkdownTable::Align::kLeft},
                   {"budget"},
                   {"layers"},
                   {"experts on CPU", MarkdownTable::Align::kLeft},
                   {"weights"},
                   {"KV"},
                   {"state"},
                   {"compute"},
                   {"total"},
                   {"headroom"},
                   {"fits", MarkdownTable::Align::kLeft}});
  for (size_t d = 0; d < plan.shares.size(); ++d) {
    const DeviceShare& s = plan.shares[d];
    const bool last = d + 1 == plan.shares.size();
    t.AddRow({s.device.name, Mib(s.device.budget()),
              std::to_string(s.layers) + (last ? " + output" : ""),
              "layers " + LayerRanges(s.cpu_expert_layers), Mib(s.use.weights_total()),
              Mib(s.use.kv), Mib(s.use.state), Mib(s.use.compute), Mib(s.use.total()),
              Mib(s.headroom), s.headroom >= 0 ? "yes" : "NO"});
  }
  return fmt::format("{} devices, safety margin {} on each. All sizes in MiB.\n\n",
                     plan.shares.size(), FormatBytes(Bytes(plan.margin))) +
         t.Render() + "\n";
}

// The GPU budget and every option's memory on each device.
std::string OptionsTable(const Plan& plan, const PlanRequest& req) {
  std::string o;
  o += fmt::format("GPU budget: {} free - {} reserved = {}; safety margin {}\n\n",
                   FormatBytes(Bytes(req.vram_free)), FormatBytes(Bytes(req.reserve)),
                   FormatBytes(Bytes(plan.budget)), FormatBytes(Bytes(plan.margin)));
  MarkdownTable t({{plan.moe ? "n-cpu-moe" : "ngl"},
                   {"GPU weights"},
                   {"KV"},
                   {"state"},
                   {"compute"},
                   {"GPU total"},
                   {"headroom"},
                   {"host"},
                   {"fits", MarkdownTable::Align::kLeft}});
  auto row = [&](const PlacementOption& p, const std::string& label, const std::string& fit) {
    t.AddRow({label, Mib(p.gpu.weights_total()), Mib(p.gpu.kv), Mib(p.gpu.state),
              Mib(p.gpu.compute), Mib(p.gpu.total()), Mib(p.headroom), Mib(p.host.total()), fit});
  };
  for (size_t i = 0; i < plan.options.size(); ++i) {
    const auto& p = plan.options[i];
    const bool is_best = plan.smallest_fitting && *plan.smallest_fitting == i;
    std::string fit = p.fits ? "yes" : "no";
    if (is_best) fit += plan.fine_filled() ? "  (fine fill above)" : "  <- recommended";
    const std::string label = std::to_string(plan.moe ? p.n_cpu_moe : p.ngl);
    if (is_best && plan.fine_filled())
      row(*plan.best(), std::to_string(plan.best()->n_cpu_moe) + " + -ot", "yes  <- recommended");
    row(p, label, fit);
  }
  o += "All sizes in MiB.\n\n" + t.Render() + "\n";
  return o;
}

}  // namespace

std::string PlanText(const ModelInfo& m, const Plan& plan, const PlanRequest& req) {
  std::string o;
  o += fmt::format("model {} ({}, {} layers{}), context {}: {}, ubatch {}, KV {}/{}\n", m.path,
                   m.arch.hp.arch, plan.n_layer, plan.moe ? ", MoE" : ", dense", req.ctx.n_ctx,
                   SlotContextText(req.ctx), plan.layout.n_ubatch, GgmlTypeName(req.ctx.type_k),
                   GgmlTypeName(req.ctx.type_v));
  if (!plan.shares.empty()) {
    o += DevicesTable(plan);
  } else if (!plan.host_only) {
    o += OptionsTable(plan, req);
  }
  if (const PlacementOption* best = plan.best()) {
    if (plan.config)
      o += fmt::format("Recommended: {}\n",
                       ShellJoin(SettingsArgv(PlacementSettings(plan.config->placement))));
    if (!plan.host_only)
      o += fmt::format(
          "  {}  weights {} + KV {} + state {} + compute {} = {} (headroom {} beyond the "
          "margin{})\n",
          plan.shares.empty() ? "GPU: " : "all devices:",
          FormatBytes(Bytes(best->gpu.weights_total())), FormatBytes(Bytes(best->gpu.kv)),
          FormatBytes(Bytes(best->gpu.state)), FormatBytes(Bytes(best->gpu.compute)),
          FormatBytes(Bytes(best->gpu.total())), FormatBytes(Bytes(best->headroom)),
          plan.shares.empty() ? "" : ", on the tightest device");
    o += fmt::format(
        "  host: weights {} + KV {} + compute {} = {}{}\n",
        FormatBytes(Bytes(best->host.weights_total())),
        FormatBytes(Bytes(best->host.kv + best->host.state)),
        FormatBytes(Bytes(best->host.compute)), FormatBytes(Bytes(best->host.total())),
        req.host_ram_available > 0
            ? fmt::format(" of {} available{}", FormatBytes(Bytes(req.host_ram_available)),
                          plan.host_ram_fits ? "" : "  (DOES NOT FIT)")
            : "");
    if (plan.moe && !plan.host_only && plan.shares.empty()) {
      // One step toward the CPU: without the fine fill's -ot, or one more layer.
      const int n = plan.options[*plan.smallest_fitting].n_cpu_moe;
      const int safer = plan.fine_filled() ? n : n + 1;
      if (safer <= plan.n_layer)
        o += fmt::format(
            "  One step more conservative (if measurement shows the edge): --n-cpu-moe {}\n",
            safer);
    }
  }
  for (const auto& n : plan.notes) o += "note: " + n + "\n";
  if (plan.config) {
    o += "\nllama-server command:\n  " + ShellJoin(ServerArgv(*plan.config)) + "\n";
  } else {
    o +=
        fmt::format("\nNo command: nothing fits ({} short).\n", FormatBytes(Bytes(plan.shortfall)));
  }
  return o;
}

}  // namespace moetune
