#include "gguf/reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "gguf/bounded_reader.h"
#include "gguf/ggml_type.h"
#include "util/checked.h"

namespace moetune {
namespace {

// Smallest possible encodings, used to refuse counts that cannot fit in the
// bytes that remain before anything is allocated for them.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // empty key, type, u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims 0, type, offset
// Vectors are never reserved beyond this from a count in the file; they grow
// with the bytes actually read instead.
constexpr uint64_t kMaxReserve = 4096;

bool IsValueType(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kFloat64); }

// Encoded size of a fixed-size value; 0 for strings and arrays.
uint64_t FixedSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

std::string Printable(std::span<const uint8_t> bytes) {
  std::string s;
  for (uint8_t b : bytes) s += (b >= 0x20 && b < 0x7f) ? static_cast<char>(b) : '.';
  return s;
}

class HeaderParser {
 public:
  HeaderParser(BoundedReader& r, uint64_t file_size, const GgufReadOptions& options)
      : r_(r), file_size_(file_size), options_(options) {}

  Result<GgufFile> Parse();

 private:
  template <typename T, typename Wide>
  Result<GgufScalar> ReadAs(const char* field) {
    MOETUNE_ASSIGN_OR_RETURN(T v, r_.Read<T>(field));
    return GgufScalar(static_cast<Wide>(v));
  }
  Result<GgufScalar> ReadScalar(GgufValueType t, const char* field);
  Status ReadHeaderStart();
  Status ReadKv(uint64_t index);
  Status ReadArray(const std::string& key, GgufValue& value);
  Status ReadTensorInfo(uint64_t index);
  Status ResolveAlignment();
  Status CheckTensorData();

  BoundedReader& r_;
  uint64_t file_size_;
  const GgufReadOptions& options_;
  GgufFile out_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  uint64_t alignment_key_at_ = 0;
  std::vector<uint64_t> offset_field_at_;  // byte offset of each tensor's offset field
  std::unordered_map<std::string, size_t> tensor_index_;
};

Result<GgufScalar> HeaderParser::ReadScalar(GgufValueType t, const char* field) {
  switch (t) {
    case GgufValueType::kUint8:
      return ReadAs<uint8_t, uint64_t>(field);
    case GgufValueType::kInt8:
      return ReadAs<int8_t, int64_t>(field);
    case GgufValueType::kUint16:
      return ReadAs<uint16_t, uint64_t>(field);
    case GgufValueType::kInt16:
      return ReadAs<int16_t, int64_t>(field);
    case GgufValueType::kUint32:
      return ReadAs<uint32_t, uint64_t>(field);
    case GgufValueType::kInt32:
      return ReadAs<int32_t, int64_t>(field);
    case GgufValueType::kUint64:
      return ReadAs<uint64_t, uint64_t>(field);
    case GgufValueType::kInt64:
      return ReadAs<int64_t, int64_t>(field);
    case GgufValueType::kFloat32:
      return ReadAs<float, double>(field);
    case GgufValueType::kFloat64:
      return ReadAs<double, double>(field);
    case GgufValueType::kBool: {
      // llama.cpp reads bools as one byte and treats any non-zero as true.
      MOETUNE_ASSIGN_OR_RETURN(uint8_t b, r_.Read<uint8_t>(field));
      return GgufScalar(b != 0);
    }
    case GgufValueType::kString: {
      MOETUNE_ASSIGN_OR_RETURN(std::string s, r_.ReadString(field, kGgufMaxStringBytes));
      return GgufScalar(std::move(s));
    }
    case GgufValueType::kArray:
      break;
  }
  return Error(ErrorKind::kInternal, "ReadScalar called with an array type");
}

Status HeaderParser::ReadHeaderStart() {
  uint8_t magic[4];
  if (r_.size() < 4) {
    return r_.FormatError(
        0, "magic",
        fmt::format("the file has only {} bytes; this is not a GGUF model file", r_.size()));
  }
  MOETUNE_TRY(r_.Read(magic, 4, "magic"));
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    return r_.FormatError(
        0, "magic",
        fmt::format("found '{}' (hex {:02x} {:02x} {:02x} {:02x}), expected 'GGUF'; this is not a "
                    "GGUF model file (convert safetensors/PyTorch checkpoints with llama.cpp's "
                    "convert_hf_to_gguf.py)",
                    Printable(magic), magic[0], magic[1], magic[2], magic[3]));
  }
  MOETUNE_ASSIGN_OR_RETURN(uint32_t version, r_.Read<uint32_t>("version"));
  if (version != 2 && version != 3) {
    std::string msg;
    uint32_t swapped = __builtin_bswap32(version);
    if ((version & 0xFFFFu) == 0 && swapped >= 1 && swapped <= 3) {
      msg = fmt::format(
          "version field reads 0x{:08x}, which is version {} byte-swapped: this is a big-endian "
          "GGUF; moetune and llama.cpp on little-endian machines need a little-endian file "
          "(convert it with gguf-py's gguf_convert_endian.py)",
          version, swapped);
    } else if (version == 1) {
      msg =
          "GGUF version 1 (2023, 32-bit counts) is not supported; re-convert the model with a "
          "current llama.cpp";
    } else {
      msg = fmt::format(
          "GGUF version {} is not supported (this build reads versions 2 and 3); "
          "update moetune or re-convert the model",
          version);
    }
    return Error(ErrorKind::kUnsupported,
                 fmt::format("{}: byte offset 4, version: {}", r_.name(), msg));
  }
  out_.version = version;

  uint64_t at = r_.offset();
  MOETUNE_ASSIGN_OR_RETURN(n_tensors_, r_.Read<uint64_t>("tensor count"));
  MOETUNE_ASSIGN_OR_RETURN(n_kv_, r_.Read<uint64_t>("metadata entry count"));
  if (n_tensors_ > kGgufMaxTensors) {
    return r_.FormatError(at, "tensor count",
                          fmt::format("{} tensors is above the limit of {}; the header is "
                                      "corrupt (real models have a few thousand at most)",
                                      n_tensors_, kGgufMaxTensors));
  }
  if (n_kv_ > kGgufMaxEntries) {
    return r_.FormatError(at + 8, "metadata entry count",
                          fmt::format("{} entries is above the limit of {}; the header is "
                                      "corrupt (real models have about a hundred at most)",
                                      n_kv_, kGgufMaxEntries));
  }
  // Both counts are i64 upstream; each entry needs a minimum number of bytes.
  if (n_tensors_ > r_.remaining() / kMinTensorInfoBytes) {
    return r_.FormatError(at, "tensor count",
                          fmt::format("{} tensors need at least {} bytes each but only {} bytes "
                                      "remain; the header is corrupt",
                                      n_tensors_, kMinTensorInfoBytes, r_.remaining()));
  }
  if (n_kv_ > r_.remaining() / kMinKvBytes) {
    return r_.FormatError(at + 8, "metadata entry count",
                          fmt::format("{} entries need at least {} bytes each but only {} bytes "
                                      "remain; the header is corrupt",
                                      n_kv_, kMinKvBytes, r_.remaining()));
  }
  return OkStatus();
}

Status HeaderParser::ReadArray(const std::string& key, GgufValue& value) {
  uint64_t type_at = r_.offset();
  MOETUNE_ASSIGN_OR_RETURN(uint32_t elem, r_.Read<uint32_t>("array element type"));
  if (!IsValueType(elem) || elem == static_cast<uint32_t>(GgufValueType::kArray)) {
    return r_.FormatError(
        type_at, "array element type",
        fmt::format("key '{}' has array element type {}, which is {}; the file is corrupt", key,
                    elem,
                    IsValueType(elem) ? "a nested array (unsupported, as in llama.cpp)"
                                      : "not a GGUF type (valid: 0..12)"));
  }
  value.array_type = static_cast<GgufValueType>(elem);
  uint64_t count_at = r_.offset();
  MOETUNE_ASSIGN_OR_RETURN(uint64_t count, r_.Read<uint64_t>("array count"));
  const bool is_string = value.array_type == GgufValueType::kString;
  const uint64_t min_elem = is_string ? 8 : FixedSize(value.array_type);
  if (count > r_.remaining() / min_elem) {
    return r_.FormatError(
        count_at, "array count",
        fmt::format("key '{}' claims {} elements of type {} (at least {} bytes each) but only {} "
                    "bytes remain; the file is truncated or corrupt",
                    key, count, GgufValueTypeName(value.array_type), min_elem, r_.remaining()));
  }
  value.array_count = count;
  const bool elide = !options_.keep_large_arrays && count > options_.max_array_elements;
  value.array_elided = elide;
  if (elide && !is_string) {
    return r_.Skip(count * min_elem, "array elements");  // fits: checked above
  }
  if (!elide) value.array.reserve(static_cast<size_t>(std::min(count, kMaxReserve)));
  for (uint64_t j = 0; j < count; ++j) {
    if (elide) {
      auto s = r_.SkipString("array string element", kGgufMaxStringBytes);
      if (!s.ok()) return s.take_error().Context(fmt::format("key '{}' element {}", key, j));
      continue;
    }
    auto v = ReadScalar(value.array_type, "array element");
    if (!v.ok()) return v.take_error().Context(fmt::format("key '{}' element {}", key, j));
    value.array.push_back(std::move(v).value());
  }
  return OkStatus();
}

Status HeaderParser::ReadKv(uint64_t index) {
  uint64_t at = r_.offset();
  auto key_or = r_.ReadString("metadata key", kGgufMaxKeyBytes);
  if (!key_or.ok()) {
    return key_or.take_error().Context(fmt::format("metadata entry {} of {}", index, n_kv_));
  }
  std::string key = std::move(key_or).value();
  uint64_t type_at = r_.offset();
  MOETUNE_ASSIGN_OR_RETURN(uint32_t type, r_.Read<uint32_t>("metadata value type"));
  if (!IsValueType(type)) {
    return r_.FormatError(type_at, "metadata value type",
                          fmt::format("key '{}' has type id {}, not a GGUF type (valid: 0..12); "
                                      "the file is corrupt",
                                      key, type));
  }
  GgufValue value;
  value.type = static_cast<GgufValueType>(type);
  if (value.type == GgufValueType::kArray) {
    MOETUNE_TRY(ReadArray(key, value));
  } else {
    auto v = ReadScalar(value.type, "metadata value");
    if (!v.ok()) return v.take_error().Context(fmt::format("key '{}'", key));
    value.scalar = std::move(v).value();
  }
  if (key == "general.alignment") alignment_key_at_ = at;
  if (out_.metadata.Has(key)) {
    return r_.FormatError(at, "metadata key",
                          fmt::format("duplicate key '{}' (entry {} repeats an earlier entry); "
                                      "the file is corrupt: re-convert it",
                                      key, index));
  }
  out_.metadata.Add(std::move(key), std::move(value));
  return OkStatus();
}

Status HeaderParser::ResolveAlignment() {
  const GgufValue* v = out_.metadata.Find("general.alignment");
  if (v == nullptr) {
    out_.alignment = kGgufDefaultAlignment;
    return OkStatus();
  }
  auto a = out_.metadata.GetUint("general.alignment");
  if (!a || *a == 0 || (*a & (*a - 1)) != 0) {
    std::string shown = a ? std::to_string(*a) : std::string("a non-integer or negative value");
    return r_.FormatError(alignment_key_at_, "general.alignment",
                          fmt::format("alignment is {}, but it must be a non-zero power of two; "
                                      "the file is corrupt",
                                      shown));
  }
  out_.alignment = *a;
  return OkStatus();
}

Status HeaderParser::ReadTensorInfo(uint64_t index) {
  uint64_t at = r_.offset();
  auto name_or = r_.ReadString("tensor name", kGgufMaxTensorNameBytes);
  if (!name_or.ok()) {
    return name_or.take_error().Context(fmt::format("tensor info {} of {}", index, n_tensors_));
  }
  TensorInfo t;
  t.name = std::move(name_or).value();
  auto where = [&](const char* what) {
    return fmt::format("tensor {} '{}' {}", index, t.name, what);
  };
  uint64_t dims_at = r_.offset();
  MOETUNE_ASSIGN_OR_RETURN(uint32_t n_dims, r_.Read<uint32_t>("tensor n_dims"));
  if (n_dims > kGgufMaxDims) {
    return r_.FormatError(dims_at, where("n_dims"),
                          fmt::format("{} dimensions, but ggml tensors have at most {}; the file "
                                      "is corrupt",
                                      n_dims, kGgufMaxDims));
  }
  uint64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t ne_at = r_.offset();
    MOETUNE_ASSIGN_OR_RETURN(int64_t ne, r_.Read<int64_t>("tensor ne"));
    if (ne <= 0) {
      return r_.FormatError(ne_at, where(fmt::format("ne[{}]", d).c_str()),
                            fmt::format("dimension is {}, but must be at least 1; the file is "
                                        "corrupt",
                                        ne));
    }
    auto prod = CheckedMul(n_elements, static_cast<uint64_t>(ne));
    if (!prod || *prod > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return r_.FormatError(ne_at, where(fmt::format("ne[{}]", d).c_str()),
                            "the element count (product of dimensions) overflows 64 bits; the "
                            "file is corrupt");
    }
    n_elements = *prod;
    t.ne.push_back(ne);
  }
  uint64_t type_at = r_.offset();
  MOETUNE_ASSIGN_OR_RETURN(t.type, r_.Read<uint32_t>("tensor type"));
  auto info = GgmlTypeById(t.type);
  if (!info) {
    return Error(ErrorKind::kUnsupported,
                 fmt::format("{}: byte offset {}, {}: ggml type id {} is unknown to this build; "
                             "update moetune (the model may also need a newer llama.cpp)",
                             r_.name(), type_at, where("type"), t.type));
  }
  uint64_t row = t.ne.empty() ? 1 : static_cast<uint64_t>(t.ne[0]);
  auto row_bytes = GgmlRowBytes(*info, row);
  if (!row_bytes) {
    return r_.FormatError(type_at, where("type"),
                          fmt::format("row length ne[0]={} is not a multiple of the block size "
                                      "{} of type {}; the file is corrupt",
                                      row, info->block_size, info->name));
  }
  auto n_bytes = CheckedMul(*row_bytes, n_elements / row);
  if (!n_bytes) {
    return r_.FormatError(type_at, where("size"), "the byte size overflows 64 bits; corrupt file");
  }
  t.n_bytes = *n_bytes;
  offset_field_at_.push_back(r_.offset());
  MOETUNE_ASSIGN_OR_RETURN(t.offset, r_.Read<uint64_t>("tensor data offset"));
  auto [it, inserted] = tensor_index_.emplace(t.name, static_cast<size_t>(index));
  if (!inserted) {
    return r_.FormatError(at, "tensor name",
                          fmt::format("duplicate tensor name '{}' (tensors {} and {}); the file "
                                      "is corrupt: re-convert it",
                                      t.name, it->second, index));
  }
  out_.tensors.push_back(std::move(t));
  return OkStatus();
}

Status HeaderParser::CheckTensorData() {
  for (size_t i = 0; i < out_.tensors.size(); ++i) {
    const TensorInfo& t = out_.tensors[i];
    const uint64_t at = offset_field_at_[i];
    const std::string field = fmt::format("tensor {} '{}' offset", i, t.name);
    if (t.offset % out_.alignment != 0) {
      return r_.FormatError(at, field,
                            fmt::format("data offset {} is not a multiple of the alignment {}; "
                                        "the file is corrupt",
                                        t.offset, out_.alignment));
    }
    auto start = CheckedAdd(out_.data_offset, t.offset);
    auto end = start ? CheckedAdd(*start, t.n_bytes) : std::nullopt;
    if (!end || *end > file_size_) {
      return r_.FormatError(
          at, field,
          fmt::format("data of {} bytes at data offset {} (absolute {}) ends past the end of the "
                      "{}-byte file; the file is truncated: re-download it",
                      t.n_bytes, t.offset,
                      start ? std::to_string(*start) : std::string("beyond 2^64"), file_size_));
    }
  }
  std::vector<size_t> order(out_.tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out_.tensors[a].offset < out_.tensors[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = out_.tensors[order[k - 1]];
    const TensorInfo& cur = out_.tensors[order[k]];
    if (prev.offset + prev.n_bytes > cur.offset) {  // no overflow: both checked above
      return r_.FormatError(
          offset_field_at_[order[k]], fmt::format("tensor {} '{}' offset", order[k], cur.name),
          fmt::format("data [{}, {}) overlaps tensor {} '{}' [{}, {}); the file is corrupt",
                      cur.offset, cur.offset + cur.n_bytes, order[k - 1], prev.name, prev.offset,
                      prev.offset + prev.n_bytes));
    }
  }
  return OkStatus();
}

Result<GgufFile> HeaderParser::Parse() {
  out_.file_size = file_size_;
  MOETUNE_TRY(ReadHeaderStart());
  for (uint64_t i = 0; i < n_kv_; ++i) MOETUNE_TRY(ReadKv(i));
  MOETUNE_TRY(ResolveAlignment());
  out_.tensors.reserve(static_cast<size_t>(std::min(n_tensors_, kMaxReserve)));
  for (uint64_t i = 0; i < n_tensors_; ++i) MOETUNE_TRY(ReadTensorInfo(i));
  auto data_offset = CheckedAlignUp(r_.offset(), out_.alignment);
  if (!data_offset) {
    return r_.FormatError(r_.offset(), "data section", "aligned offset overflows; corrupt file");
  }
  out_.data_offset = *data_offset;
  MOETUNE_TRY(CheckTensorData());
  return std::move(out_);
}

Result<GgufFile> ParseFrom(ByteSource& source, uint64_t file_size, const GgufReadOptions& options,
                           const std::string& name) {
  BoundedReader reader(source, name);
  HeaderParser parser(reader, file_size, options);
  return parser.Parse();
}

}  // namespace

Result<GgufFile> ParseGgufHeader(std::span<const uint8_t> bytes, uint64_t file_size,
                                 const GgufReadOptions& options, const std::string& name) {
  if (file_size < bytes.size()) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("{}: file size {} is smaller than the {} header bytes given", name,
                             file_size, bytes.size()));
  }
  MemorySource source(bytes);
  return ParseFrom(source, file_size, options, name);
}

Result<GgufFile> ReadGgufFile(const std::string& path, const GgufReadOptions& options) {
  MOETUNE_ASSIGN_OR_RETURN(auto source, FileSource::Open(path));
  MOETUNE_ASSIGN_OR_RETURN(GgufFile file, ParseFrom(*source, source->size(), options, path));
  file.path = path;
  return file;
}

}  // namespace moetune
