#pragma once
/// Reference encoders (and decoders, for tests) for the ggml block formats that
/// `moetune synth` writes: F32, F16, BF16, Q8_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K
/// and MXFP4 (every type llama.cpp's recipes give a tensor for the file types
/// synth offers, model/quant_recipe.h, fallbacks included).
///
/// Block layouts follow ggml/src/ggml-common.h upstream (block_q8_0, block_q5_0,
/// block_q5_1, block_q4_K, block_q5_K, block_q6_K, block_mxfp4) and the
/// decoders mirror ggml-quants.c's
/// dequantize_row_*. The encoders are simple (scales from the max abs value, no
/// error search): synthetic weights need a valid, numerically sane encoding, not
/// an optimal one.

#include <cstdint>
#include <span>

#include "util/result.h"

namespace moetune {

/// IEEE half <-> float (round to nearest even; overflow saturates to inf).
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
/// bfloat16 (round to nearest even).
uint16_t FloatToBf16(float f);
float Bf16ToFloat(uint16_t h);

/// True for the types QuantizeRow/DequantizeRow handle.
bool CanQuantize(uint32_t ggml_type);

/// Encodes `src` (a whole number of blocks of `ggml_type`) into `dst`, which must
/// be exactly GgmlRowBytes(type, src.size()) bytes. kInvalidArgument otherwise.
Status QuantizeRow(uint32_t ggml_type, std::span<const float> src, std::span<uint8_t> dst);

/// Decodes `src` (exactly GgmlRowBytes(type, dst.size()) bytes) into `dst`.
Status DequantizeRow(uint32_t ggml_type, std::span<const uint8_t> src, std::span<float> dst);

}  // namespace moetune
