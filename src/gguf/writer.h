#pragma once
/// Writes GGUF v3 files: typed metadata, tensor infos, aligned tensor data.
/// Tensor data comes from a caller-supplied source filled chunk by chunk, so a
/// multi-GB synthetic model is written without holding a tensor in memory.
/// Used to generate test models, fuzz seeds and benchmark inputs.
///
///   GgufWriter w;
///   w.SetString("general.architecture", "llama");
///   w.SetU32("llama.block_count", 2);
///   MOETUNE_TRY(w.AddTensor("token_embd.weight", {64, 100}, ggml_type::kF16));  // zeros
///   MOETUNE_TRY(w.WriteAtomically("/tmp/tiny.gguf"));

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "gguf/gguf.h"
#include "util/result.h"

namespace moetune {

/// Fills `chunk` with the tensor's bytes starting at byte `offset` of the tensor.
/// Called with consecutive, non-overlapping chunks covering the tensor in order.
using GgufChunkFiller = std::function<Status(uint64_t offset, std::span<uint8_t> chunk)>;

class GgufWriter {
 public:
  /// A tensor to write; n_bytes is derived from ne and type.
  struct Tensor {
    std::string name;
    std::vector<int64_t> ne;
    uint32_t type = 0;
    uint64_t n_bytes = 0;
    GgufChunkFiller fill;
  };

  Metadata& metadata() { return metadata_; }
  const Metadata& metadata() const { return metadata_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }

  /// Adds or replaces a key (any type, arrays included).
  void Set(std::string key, GgufValue value) { metadata_.Set(std::move(key), std::move(value)); }
  void SetU32(std::string key, uint32_t v) { Set(std::move(key), GgufValue::U32(v)); }
  void SetI32(std::string key, int32_t v) { Set(std::move(key), GgufValue::I32(v)); }
  void SetU64(std::string key, uint64_t v) { Set(std::move(key), GgufValue::U64(v)); }
  void SetF32(std::string key, float v) { Set(std::move(key), GgufValue::F32(v)); }
  void SetBool(std::string key, bool v) { Set(std::move(key), GgufValue::Bool(v)); }
  void SetString(std::string key, std::string v) {
    Set(std::move(key), GgufValue::Str(std::move(v)));
  }
  void SetStringArray(std::string key, const std::vector<std::string>& items);
  /// An integer array stored with element type `elem` (e.g. kInt32 for per-layer keys).
  void SetIntArray(std::string key, GgufValueType elem, const std::vector<int64_t>& items);

  /// Sets the data alignment (a non-zero power of two) and records it as the
  /// u32 key general.alignment, as llama.cpp does. The default is 32.
  Status SetAlignment(uint32_t alignment);
  /// The alignment in effect: general.alignment when set (also via Set), else 32.
  uint64_t alignment() const;

  /// Adds a tensor whose bytes are `data` (size must equal the tensor's size).
  Status AddTensor(std::string name, std::vector<int64_t> ne, uint32_t type,
                   std::vector<uint8_t> data);
  /// Adds a tensor whose bytes are produced by `fill` while writing.
  Status AddTensor(std::string name, std::vector<int64_t> ne, uint32_t type, GgufChunkFiller fill);
  /// Adds a tensor of zero bytes (enough for layout and size tests).
  Status AddTensor(std::string name, std::vector<int64_t> ne, uint32_t type);

  /// Bytes of the header: everything before the data section, padding included.
  Result<std::vector<uint8_t>> HeaderBytes() const;
  /// The whole file in memory (tests, fuzz seeds; small models only).
  Result<std::vector<uint8_t>> ToBytes() const;
  /// Writes `path` with OutputFile (util/output_file.h): a temporary beside it,
  /// fsync, rename, so an interrupted write never leaves a complete-looking file
  /// and the temporary is removed on any error or terminating signal; special
  /// files are written through; `inputs` may not be overwritten.
  /// Errors: kIo, kInvalidArgument (bad metadata value, output is an input).
  Status WriteAtomically(const std::string& path,
                         const std::vector<std::string>& inputs = {}) const;

 private:
  using Sink = std::function<Status(std::span<const uint8_t>)>;
  Status Emit(const Sink& sink) const;

  Metadata metadata_;
  Result<uint64_t> CheckedAlignment() const;

  std::vector<Tensor> tensors_;
  std::unordered_set<std::string> names_;  // duplicate check in O(1) (models of many layers)
};

}  // namespace moetune
