#include "plan/placement.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "gguf/ggml_type.h"

namespace moetune {
namespace {

// Host compute buffer when the layers run on the GPU: the input embeddings and
// a few activations of one ubatch (llama.cpp's CPU compute buffer is small then).
int64_t HostComputeWithGpu(const ModelArch& arch, const ContextParams& cp) {
  const int64_t T = std::min(cp.n_ubatch, cp.n_batch);
  return int64_t{arch.hp.n_embd} * T * 4 * 4;
}

PlacementOption Evaluate(const ModelArch& arch, const WeightMap& wm, const ContextMemory& cm,
                         const ComputeEstimate& ce, const PlanRequest& req, int ngl, int n_cpu_moe,
                         int64_t biggest_expert_layer) {
  PlacementOption o;
  o.ngl = ngl;
  o.n_cpu_moe = n_cpu_moe;
  const int n_layer = static_cast<int>(wm.layers.size());
  const int first_gpu_layer = std::max(0, n_layer - ngl);  // -ngl offloads the LAST ngl layers
  for (int il = 0; il < n_layer; ++il) {
    const LayerWeights& lw = wm.layers[static_cast<size_t>(il)];
    const bool on_gpu = il >= first_gpu_layer;
    for (int r = 0; r < kTensorRoleCount; ++r) {
      const auto role = static_cast<TensorRole>(r);
      int64_t b = lw.bytes[static_cast<size_t>(r)];
      bool gpu = on_gpu && !(role == TensorRole::kRoutedExperts && il < n_cpu_moe);
      (gpu ? o.gpu : o.host).weights[static_cast<size_t>(r)] += b;
    }
    const LayerContext& lc = cm.layers[static_cast<size_t>(il)];
    (on_gpu ? o.gpu : o.host).kv += lc.k_bytes + lc.v_bytes;
    (on_gpu ? o.gpu : o.host).state += lc.state_bytes;
  }
  // Globals: token_embd on host; output head and its norm on the GPU once
  // ngl > n_layer (llama.cpp: i_gpu_start / dev_output).
  const bool output_on_gpu = ngl > n_layer;
  for (int r = 0; r < kTensorRoleCount; ++r) {
    const auto role = static_cast<TensorRole>(r);
    const int64_t b = wm.global[static_cast<size_t>(r)];
    const bool gpu = output_on_gpu && role != TensorRole::kTokenEmbedding;
    (gpu ? o.gpu : o.host).weights[static_cast<size_t>(r)] += b;
  }
  if (ngl > 0) {
    o.gpu.compute = ce.total();
    // Prefill with host-resident experts: the scheduler copies those weights
    // to the GPU to compute there (GGML_OP_OFFLOAD_MIN_BATCH, 32 tokens). The
    // copies are split inputs allocated in the GPU compute buffer, sized as the
    // whole expert tensors even though only the used experts are transferred
    // (ggml-backend.cpp; llama.cpp PR #15346). One layer's set is budgeted: an
    // estimate until compared with llama-fit-params on a GPU machine.
    if (n_cpu_moe > 0 && req.ctx.n_ubatch >= 32) o.gpu.compute += biggest_expert_layer;
    o.host.compute = HostComputeWithGpu(arch, req.ctx);
  } else {
    o.host.compute = ce.total();
  }
  const int64_t budget = req.vram_free - req.reserve;
  o.headroom = budget - req.margin - o.gpu.total();
  o.fits = o.headroom >= 0;
  return o;
}

}  // namespace

Plan PlanPlacement(const GgufModel& model, const ModelArch& arch, const WeightMap& wm,
                   const PlanRequest& req) {
  Plan plan;
  plan.moe = arch.is_moe() && wm.expert_total() > 0;
  plan.n_layer = static_cast<int>(wm.layers.size());
  plan.budget = req.vram_free - req.reserve;
  plan.margin = req.margin;
  const ContextMemory cm = ComputeContextMemory(arch, req.ctx);
  const ComputeEstimate ce = EstimateCompute(arch, req.ctx);
  int64_t biggest_expert_layer = 0;
  for (const auto& l : wm.layers)
    biggest_expert_layer = std::max(biggest_expert_layer, l.experts());

  if (plan.moe) {
    // -ngl 99 always; N from 0 (all experts on GPU) to n_layer (all on CPU).
    for (int n = 0; n <= plan.n_layer; ++n)
      plan.options.push_back(
          Evaluate(arch, wm, cm, ce, req, std::max(99, plan.n_layer + 1), n, biggest_expert_layer));
    for (size_t i = 0; i < plan.options.size(); ++i) {
      if (plan.options[i].fits) {
        plan.recommended = i;
        break;
      }
    }
  } else {
    // Dense: the most layers (then the output head) that fit.
    for (int ngl = 0; ngl <= plan.n_layer + 1; ++ngl)
      plan.options.push_back(Evaluate(arch, wm, cm, ce, req, ngl, 0, 0));
    for (size_t i = plan.options.size(); i-- > 0;) {
      if (plan.options[i].fits) {
        plan.recommended = i;
        break;
      }
    }
  }

  if (!plan.recommended) {
    plan.notes.push_back(
        fmt::format("nothing fits: even with every expert in host memory the GPU needs {} + {} "
                    "margin, but only {} "
                    "is free; shorten the context (-c), quantize the KV cache (--ctk q8_0 --ctv "
                    "q8_0 with -fa on), "
                    "free VRAM held by other programs, or run on the CPU (-ngl 0)",
                    FormatBytes(Bytes(plan.options.empty() ? 0 : plan.options.back().gpu.total())),
                    FormatBytes(Bytes(req.margin)), FormatBytes(Bytes(plan.budget))));
  }

  // Fine fill: with N layers of experts on the CPU, maybe some of layer N-1's
  // expert tensors still fit. Then use N-1 and send only the rest of layer
  // N-1's experts to the CPU with -ot (unambiguous: -ot matches only them).
  if (plan.moe && plan.recommended && req.fine_fill) {
    const PlacementOption& best = plan.options[*plan.recommended];
    const int n = best.n_cpu_moe;
    if (n > 0) {
      const int layer = n - 1;
      std::vector<std::pair<std::string, int64_t>> parts;  // expert tensors of `layer`, by name
      std::map<std::string, int64_t> by_kind;
      for (size_t i = 0; i < model.tensors.size(); ++i) {
        const TensorClass& c = arch.tensors[i];
        if (c.layer != layer || c.role != TensorRole::kRoutedExperts) continue;
        const std::string& name = model.tensors[i].name;
        const size_t dot = name.find('.', 4);
        std::string kind = name.substr(dot + 1, name.find('.', dot + 1) - dot - 1);  // ffn_up_exps
        by_kind[kind] += static_cast<int64_t>(model.tensors[i].n_bytes);
      }
      // Greedy: largest tensors first that still fit in the headroom.
      std::vector<std::pair<std::string, int64_t>> kinds(by_kind.begin(), by_kind.end());
      std::sort(kinds.begin(), kinds.end(), [](auto& a, auto& b) { return a.second > b.second; });
      int64_t room = best.headroom;
      std::vector<std::string> keep_gpu, keep_cpu;
      for (const auto& [kind, bytes] : kinds) {
        if (bytes <= room) {
          keep_gpu.push_back(kind);
          room -= bytes;
        } else
          keep_cpu.push_back(kind);
      }
      if (!keep_gpu.empty() && !keep_cpu.empty()) {
        plan.fine_fill_n_cpu_moe = n - 1;
        int64_t gained = 0;
        for (const auto& k : keep_gpu) gained += by_kind[k];
        std::string alt;
        for (size_t i = 0; i < keep_cpu.size(); ++i) alt += (i ? "|" : "") + keep_cpu[i];
        plan.fine_fill.push_back({fmt::format("blk\\.{}\\.({})=CPU", layer, alt), "CPU", gained});
        plan.notes.push_back(fmt::format(
            "fine fill: --n-cpu-moe {} with -ot moving only {} of layer {} to the CPU puts {} more "
            "expert weights on the GPU",
            n - 1, alt, layer, FormatBytes(Bytes(gained))));
      }
    }
  }

  if (plan.recommended) {
    const PlacementOption& best = plan.options[*plan.recommended];
    plan.host_ram_needed = best.host.total();
    if (req.host_ram_available > 0 && plan.host_ram_needed > req.host_ram_available) {
      plan.host_ram_fits = false;
      plan.notes.push_back(fmt::format(
          "host RAM: the CPU side needs {} but only {} is available; the page cache will thrash "
          "and "
          "decode will drop several times: close programs, add RAM, or use a smaller quant",
          FormatBytes(Bytes(plan.host_ram_needed)), FormatBytes(Bytes(req.host_ram_available))));
    }
  }
  return plan;
}

std::vector<std::string> ServerArgs(const std::string& model_path, const Plan& plan,
                                    const PlanRequest& req) {
  std::vector<std::string> a = {"llama-server", "-m", model_path};
  const PlacementOption* best = plan.best();
  if (plan.moe) {
    a.insert(a.end(), {"-ngl", std::to_string(std::max(99, plan.n_layer + 1))});
    int n = best ? best->n_cpu_moe : plan.n_layer;
    if (!plan.fine_fill.empty()) n = plan.fine_fill_n_cpu_moe;
    for (const auto& o : plan.fine_fill) a.insert(a.end(), {"-ot", o.pattern});
    a.insert(a.end(), {"--n-cpu-moe", std::to_string(n)});
  } else {
    a.insert(a.end(), {"-ngl", std::to_string(best ? best->ngl : 0)});
  }
  a.insert(a.end(),
           {"-c", std::to_string(req.ctx.n_ctx), "-ub", std::to_string(req.ctx.n_ubatch), "-b",
            std::to_string(req.ctx.n_batch), "-fa", req.ctx.flash_attn ? "on" : "off"});
  if (req.ctx.type_k != ggml_type::kF16) a.insert(a.end(), {"-ctk", GgmlTypeName(req.ctx.type_k)});
  if (req.ctx.type_v != ggml_type::kF16) a.insert(a.end(), {"-ctv", GgmlTypeName(req.ctx.type_v)});
  // Explicit slots and no automatic fit: the plan was sized for exactly this.
  a.insert(a.end(), {"-np", std::to_string(std::max(1, req.ctx.n_seq)), "-fit", "off"});
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

}  // namespace moetune
