#pragma once
/// The tensor list of a synthetic model: names, shapes (ggml order, ne[0] =
/// row length) and how to initialise them, per llama.cpp architecture, plus
/// the choice of ggml type per tensor for each --quant scheme.
///
/// Names and shapes mirror llama.cpp's llama_model::load_tensors
/// (src/llama-model.cpp upstream) and were checked by loading the output with
/// the installed engine; docs/architectures.md lists them per architecture.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/synth_spec.h"
#include "util/result.h"

namespace moetune {

/// What a synthetic tensor is for; drives the type choice of a quant scheme.
enum class SynthGroup {
  kEmbedding,      // token_embd
  kOutput,         // output (LM head)
  kNorm,           // 1-D norm weights: initialised to 1
  kSmallF32,       // biases, sinks, ssm_a/ssm_dt, conv1d: always F32
  kAttention,      // q/k/v/o, MLA projections
  kRecurrent,      // Gated DeltaNet projections (ssm_in, attn_qkv, ssm_out, ...)
  kRouter,         // ffn_gate_inp: F32 like llama-quantize leaves it
  kExperts,        // routed experts (*_exps)
  kSharedExperts,  // *_shexp
  kDenseFfn,       // ffn_gate/up/down of dense layers
};

enum class SynthInit {
  kNormal,  // N(0, value)
  kConst,   // every element = value
};

struct SynthTensor {
  std::string name;
  std::vector<int64_t> ne;
  SynthGroup group = SynthGroup::kAttention;
  SynthInit init = SynthInit::kNormal;
  float value = 0.02f;
  uint64_t n_elements() const {
    uint64_t n = 1;
    for (int64_t d : ne) n *= static_cast<uint64_t>(d);
    return n;
  }
};

/// The tensors llama.cpp requires for `spec.arch`, in file order.
/// kUnsupported for an architecture synth does not know.
Result<std::vector<SynthTensor>> SynthTensorList(const SynthSpec& spec);

/// Quantisation schemes of `moetune synth --quant`.
enum class SynthQuant { kF16, kQ8_0, kQ6_K, kQ4_K, kQ4_K_M, kMxfp4 };
/// Parses f16, q8_0, q6_k, q4_k, q4_k_m, mxfp4 (case-insensitive).
Result<SynthQuant> ParseSynthQuant(std::string_view text);
const char* SynthQuantName(SynthQuant q);

/// The ggml type a tensor gets under a scheme. Norms, biases and other small
/// tensors are F32 and routers F32 (as llama-quantize leaves them). Weights take
/// the scheme's type; a row length that is not a multiple of that type's block
/// falls back to Q8_0 (rows of 32) or F16, as llama-quantize also falls back.
/// q4_k_m is a Q4_K_M-like mix: routed experts and token_embd Q4_K; output,
/// attention, recurrent projections, shared experts and dense FFNs Q6_K.
/// mxfp4 (gpt-oss's real expert format): routed experts MXFP4, the rest Q8_0.
uint32_t SynthTensorType(const SynthTensor& t, SynthQuant quant);

/// llama.cpp's general.file_type (enum llama_ftype) for a scheme.
uint32_t SynthFileType(SynthQuant quant);

}  // namespace moetune
