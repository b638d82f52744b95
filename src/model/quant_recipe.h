#pragma once
/// llama.cpp's quantization recipe: the ggml type `llama-quantize` gives each
/// tensor of a model for a file type. A "Q4_K_M" file is not all Q4_K: the
/// quantizer gives more bits to some tensors (attn_v and ffn_down on a subset
/// of layers, the output head), treats 8-expert models, tensors whose rows do
/// not fit a block and the MXFP4 MoE type specially, and leaves norms, routers
/// and other small tensors as they are.
///
/// The rules follow upstream src/llama-quant.cpp (ggml-org/llama.cpp):
/// tensor_allows_quantization, tensor_get_category, llama_tensor_get_type_impl,
/// tensor_type_fallback and llama_ftype_get_default_type, with the counters of
/// init_quantize_state_counters and the tensor order of the model loader
/// (llama_model_loader::weight_name_comparer: by layer, then by name). Only the
/// file types below are reproduced; checked tensor by tensor against the
/// installed llama-quantize (tests/integration/quant_recipe_test.cc).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace moetune {

/// The llama.cpp file types (enum llama_ftype, include/llama.h) whose recipe is
/// reproduced; the value is the general.file_type written in the GGUF.
enum class LlamaFtype : uint32_t {
  kF16 = 1,        // LLAMA_FTYPE_MOSTLY_F16
  kQ8_0 = 7,       // LLAMA_FTYPE_MOSTLY_Q8_0
  kQ4_K_S = 14,    // LLAMA_FTYPE_MOSTLY_Q4_K_S
  kQ4_K_M = 15,    // LLAMA_FTYPE_MOSTLY_Q4_K_M
  kQ5_K_S = 16,    // LLAMA_FTYPE_MOSTLY_Q5_K_S
  kQ5_K_M = 17,    // LLAMA_FTYPE_MOSTLY_Q5_K_M
  kQ6_K = 18,      // LLAMA_FTYPE_MOSTLY_Q6_K
  kMxfp4Moe = 38,  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
};

/// The name llama-quantize takes for a file type ("Q4_K_M", "MXFP4_MOE").
std::string_view LlamaFtypeName(LlamaFtype ftype);

/// What the recipe reads from the model's hyperparameters.
struct QuantRecipeModel {
  std::string arch;       // general.architecture
  int64_t n_layer = 0;    // {arch}.block_count
  int64_t n_expert = 0;   // {arch}.expert_count (0 for a dense model)
  bool type_70b = false;  // llama.cpp classifies the model as LLM_TYPE_70B (IsLlamaType70B)
};

/// True when llama.cpp's load_hparams (src/llama-model.cpp) gives the model
/// LLM_TYPE_70B, which gets a wider attn_v: llama with 80 layers, grouped-query
/// attention and not 8 experts (Llama-2/3-70B), and qwen2 with 80 layers (Qwen2-72B).
bool IsLlamaType70B(std::string_view arch, int64_t n_layer, int64_t n_expert, int64_t n_head,
                    int64_t n_head_kv);

/// One tensor of the source (F16/BF16/F32) model.
struct QuantRecipeTensor {
  std::string name;
  std::vector<int64_t> ne;   // ggml order: ne[0] is the row length
  uint32_t source_type = 0;  // its ggml type in the source file
};

/// The ggml type of each tensor (same order as `tensors`) in the file that
/// `llama-quantize SRC DST <ftype>` writes without an imatrix or overrides.
/// Tensors the quantizer leaves alone keep their source type. Where llama.cpp
/// refuses a shape (a row that is not a multiple of 32 for Q8_0 or MXFP4, for
/// which it has no fallback) the tensor gets F16, llama.cpp's own last resort.
std::vector<uint32_t> QuantRecipeTypes(const QuantRecipeModel& model, LlamaFtype ftype,
                                       std::span<const QuantRecipeTensor> tensors);

/// True when the quantizer may change the tensor's type at all
/// (tensor_allows_quantization upstream): weights of 2 or more dimensions,
/// except norms, routers (ffn_gate_inp), convolutions (ssm_conv1d) and a few others.
bool QuantizerTouches(std::string_view name, size_t n_dims);

}  // namespace moetune
