#pragma once
/// In-memory form of a GGUF header (metadata + tensor infos), shared by the
/// reader, the writer, and everything that reasons about models.
/// See gguf/reader.h for the file layout and the hardening rules.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace moetune {

/// GGUF metadata value types, ids as in the file format (gguf.h upstream).
enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
const char* GgufValueTypeName(GgufValueType t);

/// A scalar normalised to the widest C++ type of its family; the stored type is
/// kept beside it in GgufValue so that a writer can reproduce the file exactly.
using GgufScalar = std::variant<uint64_t, int64_t, double, bool, std::string>;

struct GgufValue {
  GgufValueType type = GgufValueType::kUint32;
  GgufScalar scalar;  // when type != kArray

  // Arrays (no nested arrays: llama.cpp's reader rejects them, so do we).
  GgufValueType array_type = GgufValueType::kUint32;
  uint64_t array_count = 0;
  std::vector<GgufScalar> array;  // the elements, unless elided
  /// True when the reader validated but did not keep the elements (a huge
  /// tokenizer array); array is then empty while array_count says how many.
  bool array_elided = false;

  static GgufValue U32(uint32_t v) { return Scalar(GgufValueType::kUint32, uint64_t{v}); }
  static GgufValue I32(int32_t v) { return Scalar(GgufValueType::kInt32, int64_t{v}); }
  static GgufValue U64(uint64_t v) { return Scalar(GgufValueType::kUint64, v); }
  static GgufValue F32(float v) { return Scalar(GgufValueType::kFloat32, double{v}); }
  static GgufValue Bool(bool v) { return Scalar(GgufValueType::kBool, v); }
  static GgufValue Str(std::string v) { return Scalar(GgufValueType::kString, std::move(v)); }
  static GgufValue Scalar(GgufValueType t, GgufScalar v) {
    GgufValue g;
    g.type = t;
    g.scalar = std::move(v);
    return g;
  }
  static GgufValue Array(GgufValueType elem, std::vector<GgufScalar> items) {
    GgufValue g;
    g.type = GgufValueType::kArray;
    g.array_type = elem;
    g.array_count = items.size();
    g.array = std::move(items);
    return g;
  }
};

/// Ordered key/value metadata with typed, forgiving accessors (an integer key
/// stored as u32 in one file and i32 in another reads the same).
class Metadata {
 public:
  /// Returns false (and changes nothing) when the key already exists.
  bool Add(std::string key, GgufValue value);
  void Set(std::string key, GgufValue value);  // add or replace

  const GgufValue* Find(std::string_view key) const;
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  std::optional<uint64_t> GetUint(std::string_view key) const;  // non-negative integer scalar
  std::optional<double> GetFloat(std::string_view key) const;   // any numeric scalar
  std::optional<std::string> GetString(std::string_view key) const;
  std::optional<bool> GetBool(std::string_view key) const;
  /// Integer array (any integer element type), when its elements were kept.
  std::optional<std::vector<int64_t>> GetIntArray(std::string_view key) const;
  /// A per-layer hyperparameter: a scalar broadcast to n_layer values, or an
  /// array of exactly n_layer integers (llama.cpp's get_key_or_arr). nullopt if
  /// missing or of the wrong length.
  std::optional<std::vector<int64_t>> GetPerLayer(std::string_view key, size_t n_layer) const;

  const std::vector<std::pair<std::string, GgufValue>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::string, GgufValue>> entries_;
  std::map<std::string, size_t, std::less<>> index_;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ggml order: ne[0] is the contiguous (row) dimension
  uint32_t type = 0;        // ggml type id (gguf/ggml_type.h)
  uint64_t offset = 0;      // relative to the start of the part's data section
  uint64_t n_bytes = 0;     // computed from ne and type, checked
  uint32_t part = 0;        // index of the split part holding the data

  uint64_t n_elements() const {
    uint64_t n = 1;
    for (int64_t d : ne) n *= static_cast<uint64_t>(d);
    return n;
  }
};

/// One GGUF file's header.
struct GgufFile {
  std::string path;
  uint32_t version = 3;
  uint64_t file_size = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  // absolute offset of the data section
  Metadata metadata;
  std::vector<TensorInfo> tensors;
};

/// A whole model: one file, or every part of a split model, checked together.
struct GgufModel {
  std::vector<GgufFile> parts;      // parts[0] holds the model's metadata
  std::vector<TensorInfo> tensors;  // all parts' tensors, TensorInfo::part set
  const Metadata& metadata() const { return parts.front().metadata; }
  uint64_t tensor_bytes() const {
    uint64_t n = 0;
    for (const auto& t : tensors) n += t.n_bytes;
    return n;
  }
  uint64_t file_bytes() const {
    uint64_t n = 0;
    for (const auto& p : parts) n += p.file_size;
    return n;
  }
  /// general.architecture, or "" when absent.
  std::string architecture() const {
    return metadata().GetString("general.architecture").value_or("");
  }
};

/// A short hash ("sha256:<16 hex digits>") of everything in the model that
/// can change a measurement: every metadata key and value (the
/// hyperparameters: expert_used_count, head counts, rope settings, ...) and
/// every tensor's name, type and shape. Two files with equal fingerprints run
/// the same way; a tune journal of one applies to the other.
std::string GgufFingerprint(const GgufModel& model);

}  // namespace moetune
