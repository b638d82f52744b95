#pragma once
/// The tensor list of a synthetic model: names, shapes (ggml order, ne[0] =
/// row length) and how to initialise them, per llama.cpp architecture, plus
/// the ggml type of each tensor for each --quant scheme (llama.cpp's recipe).
///
/// Names and shapes mirror llama.cpp's llama_model::load_tensors
/// (src/llama-model.cpp upstream) and were checked by loading the output with
/// the installed engine; docs/architectures.md lists them per architecture.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/quant_recipe.h"
#include "model/synth_spec.h"
#include "util/result.h"

namespace moetune {

/// What a synthetic tensor is for: its initialisation, and F32 or F16 in the F16 file.
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

/// Quantisation schemes of `moetune synth --quant`: llama.cpp file types.
/// kQ4_K is Q4_K_S (it parses from q4_k and q4_k_s).
enum class SynthQuant { kF16, kQ8_0, kQ6_K, kQ4_K, kQ4_K_M, kQ5_K_S, kQ5_K_M, kMxfp4 };
/// Parses f16, q8_0, q6_k, q5_k_m, q5_k_s, q4_k_m, q4_k_s (or q4_k), mxfp4
/// (case-insensitive).
Result<SynthQuant> ParseSynthQuant(std::string_view text);
const char* SynthQuantName(SynthQuant q);

/// The llama.cpp file type a scheme writes (general.file_type).
LlamaFtype SynthFtype(SynthQuant quant);

/// The ggml type of a tensor in the F16 file (the source llama-quantize would
/// start from): F32 for norms, biases, routers and other small tensors (as
/// llama.cpp's converter writes them), F16 for the weights.
uint32_t SynthSourceType(const SynthTensor& t);

/// The ggml type of each tensor of `tensors` (SynthTensorList(spec), same
/// order) under a scheme: the type llama-quantize gives it when it turns the
/// F16 file into that file type (model/quant_recipe.h): more bits for attn_v
/// and ffn_down on some layers and for the output head, 8-expert rules,
/// fallbacks for rows that do not fit a block; tensors the quantizer leaves
/// alone keep their F16-file type.
std::vector<uint32_t> SynthTensorTypes(const SynthSpec& spec,
                                       const std::vector<SynthTensor>& tensors, SynthQuant quant);

/// llama.cpp's general.file_type (enum llama_ftype) for a scheme.
uint32_t SynthFileType(SynthQuant quant);

}  // namespace moetune
