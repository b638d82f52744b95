#pragma once
/// Split GGUF models: NAME-00001-of-00003.gguf ... (llama.cpp's llama_split_path,
/// "%s-%05d-of-%05d.gguf"). Each part is a complete GGUF file carrying
///   split.no             u16, 0-based index of the part (file number - 1)
///   split.count          u16, number of parts
///   split.tensors.count  i32, tensors in the whole model
/// and part 1 carries the model's metadata (tools/gguf-split/gguf-split.cpp).
/// Tensor offsets stay relative to the data section of the part holding them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "util/result.h"

namespace moetune {

inline constexpr std::string_view kSplitNoKey = "split.no";
inline constexpr std::string_view kSplitCountKey = "split.count";
inline constexpr std::string_view kSplitTensorsCountKey = "split.tensors.count";

/// A part's file name taken apart.
struct GgufSplitName {
  std::string prefix;  // everything before "-00002-of-00003.gguf", directory included
  uint32_t index = 0;  // 0-based (file number - 1), as split.no
  uint32_t count = 0;
};

/// "<prefix>-<index+1 as %05d>-of-<count as %05d>.gguf".
std::string GgufSplitPath(std::string_view prefix, uint32_t index, uint32_t count);
/// Parses a part's path; nullopt when it does not follow the pattern (or says
/// part 0, or a part number above the count).
std::optional<GgufSplitName> ParseGgufSplitPath(std::string_view path);

/// Reads a model given its only file or any part of a split model: finds every
/// part beside it, reads each header and checks them together (split.count and
/// split.no of every part, the total tensor count, no tensor in two parts).
/// Errors: kNotFound naming a missing part's expected path; kFormat for
/// inconsistent parts; plus ReadGgufFile's errors with the part named.
Result<GgufModel> OpenGgufModel(const std::string& path, const GgufReadOptions& options = {});

/// Checks already-read parts (in part order) and assembles the model; a single
/// file without split keys is a one-part model. OpenGgufModel's checks.
Result<GgufModel> AssembleGgufModel(std::vector<GgufFile> parts);

/// Writes `model` as `n_parts` split files "<prefix>-0000i-of-0000n.gguf",
/// tensors divided in order into groups of equal count (the last one smaller),
/// model metadata in part 1 only, as llama-gguf-split does. Each part is written
/// atomically; on failure the parts already written are removed.
/// Returns the parts' paths.
Result<std::vector<std::string>> WriteGgufSplit(const GgufWriter& model, std::string_view prefix,
                                                uint32_t n_parts);

}  // namespace moetune
