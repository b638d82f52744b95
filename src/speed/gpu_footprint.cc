#include "speed/gpu_footprint.h"

#include <fmt/format.h>

#include <algorithm>

#include "plan/placement.h"

namespace moetune {

namespace {

ContextParams ContextFor(const RunSettings& run) {
  ContextParams cp;
  const int64_t need = int64_t{run.n_prompt} + run.n_gen + run.n_depth;
  cp.n_ctx = std::max<int64_t>(1, run.n_ctx > 0 ? run.n_ctx : need);
  cp.n_seq = std::max(1, run.n_seq);
  cp.kv_unified = run.kv_unified;
  cp.type_k = run.type_k;
  cp.type_v = run.type_v;
  cp.n_batch = std::max<int64_t>(1, run.n_batch);
  cp.n_ubatch = std::max<int64_t>(1, std::min<int64_t>(run.n_ubatch, cp.n_batch));
  cp.flash_attn = run.flash_attn;
  return cp;
}

double Mib(int64_t b) { return static_cast<double>(b) / 1048576.0; }

// One layer's activations for one micro-batch: its widest FFN (or recurrent)
// stage and the KQ mask(s) it reads (src/llama-graph.cpp build_attn_inp_kq_mask,
// build_moe_ffn). A traffic figure for the speed model, not a buffer size:
// the buffers themselves come from the reserve graph (model/compute_buffers.h).
int64_t LayerStageBytes(const ModelArch& arch, const ContextParams& cp) {
  const Hparams& hp = arch.hp;
  const int64_t t = std::min<int64_t>(cp.n_ubatch, cp.n_batch);
  const int64_t n_ctx = (std::max<int64_t>(cp.n_ctx, 1) + 255) / 256 * 256;
  int64_t swa_cells = 0;
  bool any_full = false;
  for (const auto& l : arch.layers) {
    if (!l.has_kv) continue;
    if (l.attention == AttentionKind::kSlidingWindow || l.attention == AttentionKind::kChunked) {
      const int64_t want =
          static_cast<int64_t>(l.window) * (cp.kv_unified ? std::max(1, cp.n_seq) : 1) +
          cp.n_ubatch;
      swa_cells = std::max(swa_cells, std::min(n_ctx, (want + 255) / 256 * 256));
    } else {
      any_full = true;
    }
  }
  const int64_t masks = ((any_full ? n_ctx : 0) + swa_cells) * t * (cp.flash_attn ? 2 : 4);
  const int64_t hidden = int64_t{hp.n_embd} * t * 4;
  int64_t ffn = 0;
  if (hp.n_expert > 0) {
    const int64_t k = std::max<uint32_t>(hp.n_expert_used, 1);
    // Biased experts (gpt-oss) keep the biased copies and the activation alive too.
    ffn = hp.expert_bias ? t * k * (3 * int64_t{hp.n_ff_exp} + 2 * int64_t{hp.n_embd}) * 4
                         : t * k * (2 * int64_t{hp.n_ff_exp} + hp.n_embd) * 4 + hidden;
  }
  const bool any_dense = std::any_of(arch.layers.begin(), arch.layers.end(),
                                     [](const LayerInfo& l) { return !l.moe; });
  if (hp.n_ff > 0 && any_dense)
    ffn = std::max(ffn, t * (2 * int64_t{hp.n_ff} + hp.n_embd) * 4 + hidden);
  const int64_t recurrent = hp.ssm_d_inner ? int64_t{hp.ssm_d_inner} * t * 4 * 4 + hidden : 0;
  return std::max(ffn, recurrent) + masks;
}

PlanRequest FootprintRequest(const ContextParams& ctx) {
  PlanRequest req;
  req.ctx = ctx;
  req.vram_free = int64_t{1} << 60;
  req.margin = 0;
  req.fine_fill = false;
  return req;
}

FootprintPlans::Key KeyOf(const ContextParams& c) {
  return {c.n_ctx,    c.n_seq,   c.kv_unified, c.type_k,   c.type_v,
          c.n_ubatch, c.n_batch, c.flash_attn, c.swa_full, static_cast<int>(c.reserve_outputs)};
}

}  // namespace

ContextParams FootprintContext(const RunSettings& run) { return ContextFor(run); }

std::shared_ptr<const Plan> FootprintPlans::Get(const ModelInfo& model, const ContextParams& c) {
  const Key key = KeyOf(c);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    if (plans_.size() >= kMaxPlans) plans_.clear();
    auto planned = PlanPlacement(model.gguf, model.arch, model.weights, FootprintRequest(c));
    std::shared_ptr<const Plan> plan;
    if (planned.ok()) plan = std::make_shared<const Plan>(std::move(planned).value());
    it = plans_.emplace(key, std::move(plan)).first;
  }
  return it->second;
}

std::shared_ptr<const PlacementOption> FootprintPlans::Evaluate(
    const ModelInfo& model, const ContextParams& ctx, const WeightPlacement& placement,
    const std::vector<DeviceKind>& kinds, const std::string& key) {
  const auto k = std::make_pair(KeyOf(ctx), key);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = evaluated_.find(k);
  if (it == evaluated_.end()) {
    if (evaluated_.size() >= kMaxPlans) evaluated_.clear();
    auto option = EvaluatePlacement(model.gguf, model.arch, model.weights, ctx, placement, kinds);
    std::shared_ptr<const PlacementOption> held;
    if (option.ok()) held = std::make_shared<const PlacementOption>(std::move(option).value());
    it = evaluated_.emplace(k, std::move(held)).first;
  }
  return it->second;
}

std::vector<GpuFootprint> ComputeDeviceFootprints(const ModelInfo& model,
                                                  const WeightPlacement& placement,
                                                  const RunSettings& run,
                                                  const std::vector<AcceleratorSpec>& devices,
                                                  const std::string& key, FootprintPlans* plans) {
  std::vector<GpuFootprint> out(devices.size());
  std::vector<DeviceKind> kinds;
  kinds.reserve(devices.size());
  for (const AcceleratorSpec& d : devices)
    kinds.push_back(d.kind == AcceleratorKind::kRpcCpu ? DeviceKind::kRpc : DeviceKind::kCuda);
  const ContextParams ctx = ContextFor(run);
  FootprintPlans local;
  const auto option =
      (plans != nullptr ? plans : &local)->Evaluate(model, ctx, placement, kinds, key);
  // A placement the memory map cannot size has no footprint to offer.
  if (option == nullptr) return out;
  const int64_t used = int64_t{run.n_depth} + run.n_prompt + run.n_gen;
  const double used_share = std::min(
      1.0, static_cast<double>(used) / static_cast<double>(std::max<int64_t>(1, ctx.n_ctx)));
  const int64_t stage = LayerStageBytes(model.arch, ctx);
  for (size_t d = 0; d < devices.size() && d < option->devices.size(); ++d) {
    const DeviceBreakdown& b = option->devices[d];
    GpuFootprint& f = out[d];
    f.runtime = std::max<int64_t>(0, devices[d].runtime_bytes);
    f.weights = b.weights_total();
    f.kv = b.kv;
    // The cells the test occupies (windowed caches are counted as growing:
    // a small overstatement of the traffic on a device that holds them).
    f.kv_used = static_cast<int64_t>(static_cast<double>(b.kv) * used_share);
    f.state = b.state;
    f.compute = b.compute;
    f.compute_stage = stage;
  }
  return out;
}

GpuFootprint ComputeGpuFootprint(const ModelInfo& model, const ModelShape& shape,
                                 const Residency& residency, const RunSettings& run,
                                 const AcceleratorSpec* accel, FootprintPlans* plans) {
  GpuFootprint f;
  if (accel == nullptr) return f;
  f.runtime = std::max<int64_t>(0, accel->runtime_bytes);
  // The plan's device model gives the compute buffers (with the copy budget for
  // op offload) and, for the standard placements, the whole GPU side.
  const PlanRequest req = FootprintRequest(ContextFor(run));
  std::shared_ptr<const Plan> held;
  if (plans != nullptr) {
    held = plans->Get(model, req.ctx);
  } else if (auto planned = PlanPlacement(model.gguf, model.arch, model.weights, req);
             planned.ok()) {
    held = std::make_shared<const Plan>(std::move(planned).value());
  }
  // A model the planner cannot size (absurd header) has no footprint to offer.
  if (held == nullptr) return f;
  const Plan& plan = *held;
  const int n_layer = static_cast<int>(shape.layers.size());
  const PlacementOption* option = nullptr;
  bool standard = run.override_tensor.empty();
  if (!plan.options.empty()) {
    if (plan.moe) {
      option = &plan.options[static_cast<size_t>(std::clamp(run.n_cpu_moe, 0, n_layer))];
      standard = standard && run.n_gpu_layers > n_layer;
    } else {
      option = &plan.options[static_cast<size_t>(std::clamp(run.n_gpu_layers, 0, n_layer + 1))];
    }
  }
  auto context_memory = ComputeContextMemory(model.arch, req.ctx);
  if (!context_memory.ok()) return f;
  const ContextMemory& cm = *context_memory;
  if (option != nullptr && standard) {
    f.weights = option->gpu.weights_total();
    f.kv = option->gpu.kv;
    f.state = option->gpu.state;
    f.compute = option->gpu.compute;
  } else {
    // -ot overrides or a partial -ngl on an MoE model: weights from the
    // resolved residency, KV and state of the layers on the GPU.
    f.weights = static_cast<int64_t>(residency.gpu_weight_bytes);
    for (size_t i = 0; i < cm.layers.size() && i < residency.layers.size(); ++i) {
      if (!residency.layers[i].layer_on_gpu) continue;
      f.kv += cm.layers[i].k_bytes + cm.layers[i].v_bytes;
      f.state += cm.layers[i].state_bytes;
    }
    f.compute = option != nullptr ? option->gpu.compute : 0;
    if (f.weights == 0 && f.kv == 0) f.compute = 0;
  }
  // Cells the test occupies: depth + its own tokens (growing layers only; windowed
  // caches are small and touched in full).
  const int64_t used =
      std::min<int64_t>(cm.n_ctx_padded, int64_t{run.n_depth} + run.n_prompt + run.n_gen);
  int64_t growing_gpu = 0;
  for (size_t i = 0; i < cm.layers.size() && i < residency.layers.size(); ++i) {
    if (!residency.layers[i].layer_on_gpu) continue;
    const auto kind = model.arch.layers[i].attention;
    if (kind == AttentionKind::kFull || kind == AttentionKind::kMla)
      growing_gpu += cm.layers[i].k_bytes + cm.layers[i].v_bytes;
  }
  growing_gpu = std::min(growing_gpu, f.kv);
  const double used_share =
      cm.n_ctx_padded > 0 ? static_cast<double>(used) / static_cast<double>(cm.n_ctx_padded) : 1.0;
  f.kv_used =
      f.kv - growing_gpu + static_cast<int64_t>(static_cast<double>(growing_gpu) * used_share);
  // One layer's activations: its widest FFN (or recurrent) stage and the KQ mask
  // it reads; the logits stage runs once per batch, not per layer.
  f.compute_stage = LayerStageBytes(model.arch, req.ctx);
  return f;
}

std::string StrictFailure(const GpuFootprint& f, int64_t budget, const std::string& device) {
  // The messages are llama.cpp's own (ggml/src/ggml-cuda/ggml-cuda.cu
  // ggml_backend_cuda_buffer_type_alloc_buffer; src/llama-model.cpp load_tensors;
  // src/llama-kv-cache.cpp; ggml/src/ggml-alloc.c ggml_gallocr_reserve_n).
  // CUDA's line names the device by its index (CUDA1: device 1); another
  // backend's failure shows only in llama.cpp's lines, which name the buffer.
  const bool is_cuda = device.rfind("CUDA", 0) == 0;
  const std::string index = is_cuda ? device.substr(4) : std::string();
  auto cuda = [&](int64_t size) {
    if (!is_cuda) return fmt::format("{}: failed to allocate {:.2f} MiB", device, Mib(size));
    return fmt::format(
        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating {:.2f} MiB on device "
        "{}: cudaMalloc failed: out of memory",
        Mib(size), index.empty() ? "0" : index);
  };
  if (f.runtime > budget) {
    return "ggml_cuda_init: failed to initialize CUDA: out of memory\n"
           "llama_model_load_from_file_impl: failed to load model";
  }
  budget -= f.runtime;
  if (f.weights > budget) {
    return cuda(f.weights) + "\n" +
           fmt::format("llama_model_load: error loading model: unable to allocate {} buffer",
                       device) +
           "\nllama_model_load_from_file_impl: failed to load model";
  }
  if (f.weights + f.kv + f.state > budget) {
    return cuda(f.kv + f.state) + "\n" +
           "llama_init_from_model: failed to initialize the context: failed to allocate buffer for "
           "kv cache";
  }
  if (f.weights + f.kv + f.state + f.compute > budget) {
    return cuda(f.compute) + "\n" +
           fmt::format("ggml_gallocr_reserve_n: failed to allocate {} buffer of size {}", device,
                       f.compute) +
           "\nllama_init_from_model: failed to initialize the context: failed to allocate compute "
           "buffers";
  }
  return "";
}

}  // namespace moetune
