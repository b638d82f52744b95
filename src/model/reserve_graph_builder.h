#pragma once
/// The builder behind BuildReserveGraph (model/reserve_graph.h): one method
/// per llama.cpp graph helper. Internal to the model library; each method
/// names the upstream function it mirrors.

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/gguf.h"
#include "model/arch.h"
#include "model/graph_sim.h"
#include "model/memory_map.h"
#include "model/weight_placement.h"
#include "util/result.h"

namespace moetune {

class ReserveGraphBuilder {
 public:
  using Id = SimGraph::Id;

  ReserveGraphBuilder(const GgufModel& model, const ModelArch& arch,
                      const std::unordered_map<std::string_view, size_t>& index,
                      const ContextParams& cp, const ContextLayout& layout,
                      const WeightPlacement& placement);

  /// Builds the graph over `layers` (indices into arch.layers, ascending).
  Result<SimGraph> Build(const std::vector<int>& layers);

 private:
  static constexpr int64_t kF32 = 4;  // bytes of an f32 element (the strides of views)
  enum class Gating { kSoftmax, kSigmoid, kSoftmaxWeight };

  // Weights (-1 when the file has no such tensor) and their devices.
  Id W(const std::string& name, int il = -1);
  Id Wl(int il, const char* kind, const char* suffix = "weight") {
    return W(fmt_name(il, kind, suffix), il);
  }
  static std::string fmt_name(int il, const char* kind, const char* suffix);

  // Inputs (src/llama-graph.cpp build_inp_*), created once per graph.
  Id InpPos();
  Id OutIds();
  Id AttnScale();
  struct KvInputs {
    Id k_idxs = -1, v_idxs = -1, mask = -1;
  };
  KvInputs& Kv(bool swa, int64_t window, int64_t n_embd_v_gqa);
  Id RsCopy();

  // Blocks.
  Id Embd();
  Id Norm(Id x, Id w, const std::string& name);
  Id Linear(Id w, Id x, Id bias, const std::string& name);
  Id Attn(int il, Id cur);     // build_attn + model-specific Q/K/V
  Id AttnMla(int il, Id cur);  // deepseek2 (MLA)
  Id Mha(int il, Id q, Id k, Id v, Id v_mla, Id sinks, const KvInputs& in);
  struct KvCaches {
    Id k = -1, v = -1;
  };
  KvCaches StoreKv(int il, Id k, Id v, bool swa, int64_t n_embd_v_gqa);
  Id Ffn(int il, Id x, const char* up, const char* gate, const char* down, const char* name);
  Id Moe(int il, Id x);
  Id MoeSum(int il, Id experts, int64_t n_embd, int64_t T, int64_t k);
  Id SharedExperts(int il, Id x, Id moe_out);
  Id DeltaNet(int il, Id cur);  // qwen35moe / qwen35 / qwen3next linear attention
  // The head sizes of a DeltaNet layer.
  struct DeltaNetHeads {
    int64_t head_k = 0, n_k_heads = 0, head_v = 0, n_v_heads = 0;
  };
  Id DeltaNetQkv(int il, Id cur, const DeltaNetHeads& h, Id* mixed);
  Id DeltaNetGate(int il, Id cur, const DeltaNetHeads& h, Id* beta);
  Id DeltaNetOutput(int il, Id cur, Id mixed, Id normed, const DeltaNetHeads& h);
  Id Output(Id cur);

  // The graph's buffer index of a device index (kHostDevice: the host, last).
  int Buffer(int device) const;
  int LayerDevice(int il) const;
  bool Swa(int il) const;
  SimType CacheType(uint32_t ggml_type) const;

  const GgufModel& model_;
  const ModelArch& arch_;
  const Hparams& hp_;
  const ContextParams& cp_;
  const ContextLayout& layout_;
  const WeightPlacement& placement_;
  SimGraph g_;
  const std::unordered_map<std::string_view, size_t>& tensor_index_;
  std::unordered_map<std::string, Id> weights_;
  int host_ = 0;  // buffers: the devices 0..host_-1, then the host
  int n_layer_ = 0;
  int last_layer_ = -1;
  int64_t T_ = 0;       // tokens in the reserve ubatch
  int64_t n_seqs_ = 1;  // sequences in it
  Id inp_pos_ = -1, out_ids_ = -1, attn_scale_ = -1, rs_copy_ = -1;
  KvInputs kv_[2];
  std::string arch_name_;
  Gating gating_ = Gating::kSoftmax;
  bool norm_w_ = false;
  float w_scale_ = 0;
};

}  // namespace moetune
