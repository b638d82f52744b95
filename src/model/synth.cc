#include "model/synth.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "gguf/ggml_type.h"
#include "model/quantize.h"
#include "model/synth_tokenizer.h"
#include "util/checked.h"

namespace moetune {
namespace {

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t HashName(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Produces one tensor's bytes row by row; rows are generated from
// (seed, tensor name, row index), so any chunking yields the same file.
class RowSource {
 public:
  RowSource(SynthTensor t, uint32_t type, uint64_t seed)
      : t_(std::move(t)), type_(type), seed_(seed ^ HashName(t_.name)) {
    row_elems_ = static_cast<size_t>(t_.ne[0]);
    const auto info = GgmlTypeById(type_);
    row_bytes_ = static_cast<size_t>(*GgmlRowBytes(*info, row_elems_));
    values_.resize(row_elems_);
    bytes_.resize(row_bytes_);
  }

  Status Fill(uint64_t offset, std::span<uint8_t> chunk) {
    size_t done = 0;
    while (done < chunk.size()) {
      const uint64_t pos = offset + done;
      const uint64_t row = pos / row_bytes_;
      const size_t within = static_cast<size_t>(pos % row_bytes_);
      if (row != cached_row_) MOETUNE_TRY(MakeRow(row));
      const size_t n = std::min(chunk.size() - done, row_bytes_ - within);
      std::memcpy(chunk.data() + done, bytes_.data() + within, n);
      done += n;
    }
    return OkStatus();
  }

 private:
  Status MakeRow(uint64_t row) {
    if (t_.init == SynthInit::kConst) {
      std::fill(values_.begin(), values_.end(), t_.value);
    } else {
      uint64_t state = seed_ + row * 0x632be59bd9b4e019ull;
      // Irwin-Hall: the sum of 4 uniforms, centred and scaled, is close enough
      // to a normal for weights and much cheaper than Box-Muller.
      const float scale = t_.value * std::sqrt(3.0f) * (1.0f / 65536.0f);
      for (float& v : values_) {
        const uint64_t r = SplitMix(state);
        const float sum = static_cast<float>((r & 0xffff) + ((r >> 16) & 0xffff) +
                                             ((r >> 32) & 0xffff) + (r >> 48));
        v = (sum - 2.0f * 65536.0f) * scale;
      }
    }
    MOETUNE_TRY(QuantizeRow(type_, values_, bytes_));
    cached_row_ = row;
    return OkStatus();
  }

  SynthTensor t_;
  uint32_t type_;
  uint64_t seed_;
  size_t row_elems_ = 0, row_bytes_ = 0;
  std::vector<float> values_;
  std::vector<uint8_t> bytes_;
  uint64_t cached_row_ = UINT64_MAX;
};

// mrope sections of Qwen3.5 ([11, 11, 10] of 32 rotary pairs), scaled to n_rot/2.
std::vector<int64_t> RopeSections(int64_t n_rot) {
  const int64_t half = n_rot / 2;
  const int64_t a = half * 11 / 32;
  return {a, a, half - 2 * a, 0};
}

}  // namespace

void AddSynthHparams(const SynthSpec& s, GgufWriter& w) {
  const std::string p = s.arch + ".";
  auto u32 = [&](const std::string& k, int64_t v) { w.SetU32(p + k, static_cast<uint32_t>(v)); };
  u32("context_length", s.n_ctx_train);
  u32("embedding_length", s.n_embd);
  u32("block_count", s.n_layer);
  u32("feed_forward_length", s.n_ff > 0 ? s.n_ff : s.n_ff_exp);
  u32("attention.head_count", s.n_head);
  u32("attention.head_count_kv", s.arch == "deepseek2" ? 1 : s.n_head_kv);
  w.SetF32(p + "attention.layer_norm_rms_epsilon", s.rms_eps);
  w.SetF32(p + "rope.freq_base", s.rope_theta);
  u32("rope.dimension_count", s.n_rot);
  u32("vocab_size", s.n_vocab);
  if (s.arch == "deepseek2") {
    // MLA in the converter's current layout: the cache holds the compressed
    // latent (kv_lora_rank) plus the rope part; *_mla are the per-head sizes.
    u32("attention.key_length", s.kv_lora_rank + s.qk_rope_dim);
    u32("attention.value_length", s.kv_lora_rank);
    u32("attention.key_length_mla", s.qk_nope_dim + s.qk_rope_dim);
    u32("attention.value_length_mla", s.v_head_dim);
    if (s.q_lora_rank > 0) u32("attention.q_lora_rank", s.q_lora_rank);
    u32("attention.kv_lora_rank", s.kv_lora_rank);
  } else {
    u32("attention.key_length", s.head_dim);
    u32("attention.value_length", s.head_dim);
  }
  if (s.moe()) {
    u32("expert_count", s.n_expert);
    u32("expert_used_count", s.n_expert_used);
    u32("expert_feed_forward_length", s.n_ff_exp);
  }
  if (s.n_expert_shared > 0) {
    u32("expert_shared_count", s.n_expert_shared);
    u32("expert_shared_feed_forward_length", s.n_ff_shexp);
  }
  if (s.arch == "deepseek2" || s.arch == "glm4moe") {
    u32("leading_dense_block_count", s.leading_dense);
    w.SetF32(p + "expert_weights_scale", s.arch == "deepseek2" ? 2.5f : 1.0f);
    w.SetBool(p + "expert_weights_norm", true);
    u32("expert_gating_func", 2);  // LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID
  }
  if (s.arch == "glm4moe") u32("nextn_predict_layers", 0);
  if (s.full_attention_interval > 0) {
    u32("full_attention_interval", s.full_attention_interval);
    u32("ssm.conv_kernel", s.ssm_conv_kernel);
    u32("ssm.state_size", s.ssm_state);
    u32("ssm.group_count", s.ssm_groups);
    u32("ssm.time_step_rank", s.ssm_dt_rank);
    u32("ssm.inner_size", s.ssm_inner());
  }
  if (s.arch == "qwen35moe") {
    w.SetIntArray(p + "rope.dimension_sections", GgufValueType::kInt32, RopeSections(s.n_rot));
  }
  if (s.arch == "gpt-oss") {
    u32("attention.sliding_window", s.sliding_window);
    w.SetString(p + "rope.scaling.type", "yarn");
    w.SetF32(p + "rope.scaling.factor", 32.0f);
    u32("rope.scaling.original_context_length", 4096);
  }
  if (s.arch == "llama4") u32("interleave_moe_layer_step", 1);
}

namespace {

// Adds one tensor to the totals; the sums of a shape at the edge of its ranges
// could pass 2^64 bytes, which is an error, not a wrapped size.
Status AddToSummary(uint64_t n_elements, uint64_t n_bytes, SynthSummary* sum) {
  auto params = CheckedAdd(sum->n_params, n_elements);
  auto bytes = CheckedAdd(sum->tensor_bytes, n_bytes);
  if (!params || !bytes) {
    return Error(ErrorKind::kInvalidArgument,
                 "the model's tensors add up to more than 2^64 bytes; use fewer layers or "
                 "smaller widths");
  }
  sum->n_tensors += 1;
  sum->n_params = *params;
  sum->tensor_bytes = *bytes;
  return OkStatus();
}

}  // namespace

Result<SynthSummary> SummarizeSynth(const SynthSpec& spec, SynthQuant quant) {
  MOETUNE_ASSIGN_OR_RETURN(auto tensors, SynthTensorList(spec));
  const std::vector<uint32_t> types = SynthTensorTypes(spec, tensors, quant);
  SynthSummary sum;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const SynthTensor& t = tensors[i];
    const auto info = GgmlTypeById(types[i]);
    const auto row = GgmlRowBytes(*info, static_cast<uint64_t>(t.ne[0]));
    if (!row) return Error(ErrorKind::kInternal, fmt::format("tensor {}: bad row length", t.name));
    auto bytes = CheckedMul(*row, t.n_elements() / static_cast<uint64_t>(t.ne[0]));
    if (!bytes)
      return Error(ErrorKind::kInvalidArgument, fmt::format("tensor {}: too large", t.name));
    MOETUNE_TRY(AddToSummary(t.n_elements(), *bytes, &sum));
  }
  return sum;
}

Result<GgufWriter> BuildSynthWriter(const SynthOptions& o, SynthSummary* summary) {
  const SynthSpec& s = o.spec;
  MOETUNE_ASSIGN_OR_RETURN(auto tensors, SynthTensorList(s));
  MOETUNE_ASSIGN_OR_RETURN(SynthVocab vocab, MakeSynthVocab(s.n_vocab));
  GgufWriter w;
  w.SetString("general.architecture", s.arch);
  w.SetString("general.type", "model");
  w.SetString("general.name", s.model_name);
  w.SetU32("general.file_type", SynthFileType(o.quant));
  w.SetU32("general.quantization_version", 2);
  AddSynthHparams(s, w);
  AddSynthVocab(vocab, w);

  auto total = std::make_shared<uint64_t>(0);
  auto done = std::make_shared<uint64_t>(0);
  const std::vector<uint32_t> types = SynthTensorTypes(s, tensors, o.quant);
  SynthSummary sum;
  for (size_t i = 0; i < tensors.size(); ++i) {
    SynthTensor& t = tensors[i];
    const uint32_t type = types[i];
    std::string name = t.name;
    std::vector<int64_t> ne = t.ne;
    const uint64_t n_elem = t.n_elements();
    auto src = std::make_shared<RowSource>(std::move(t), type, o.seed);
    auto progress = o.progress;
    GgufChunkFiller fill = [src, progress, total, done](uint64_t off,
                                                        std::span<uint8_t> chunk) -> Status {
      MOETUNE_TRY(src->Fill(off, chunk));
      *done += chunk.size();
      if (progress) return progress(*done, *total);
      return OkStatus();
    };
    auto st = w.AddTensor(name, std::move(ne), type, std::move(fill));
    if (!st.ok()) return st.take_error().Context(fmt::format("tensor '{}'", name));
    MOETUNE_TRY(AddToSummary(n_elem, w.tensors().back().n_bytes, &sum));
  }
  *total = sum.tensor_bytes;
  if (summary != nullptr) *summary = sum;
  return w;
}

Result<SynthSummary> WriteSynthModel(const SynthOptions& o, const std::string& path,
                                     const std::vector<std::string>& inputs) {
  SynthSummary sum;
  MOETUNE_ASSIGN_OR_RETURN(GgufWriter w, BuildSynthWriter(o, &sum));
  MOETUNE_TRY(w.WriteAtomically(path, inputs));
  return sum;
}

}  // namespace moetune
