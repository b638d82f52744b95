#include "gguf/writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>

#include "gguf/ggml_type.h"
#include "gguf/reader.h"
#include "util/checked.h"
#include "util/output_file.h"

namespace moetune {
namespace {

// Data is streamed through a buffer of at most this many bytes per tensor.
constexpr uint64_t kChunkBytes = 4 << 20;

class Encoder {
 public:
  std::vector<uint8_t>& bytes() { return out_; }

  template <typename T>
  void Put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // little-endian host (asserted in bounded_reader.h)
    out_.insert(out_.end(), b, b + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }

  /// Encodes a scalar of type t, checking that the value fits the type.
  Status PutScalar(GgufValueType t, const GgufScalar& s, const std::string& key) {
    auto bad = [&](const char* why) {
      return Error(ErrorKind::kInvalidArgument, fmt::format("metadata key '{}': value {} type {}",
                                                            key, why, GgufValueTypeName(t)));
    };
    switch (t) {
      case GgufValueType::kUint8:
        return PutInt<uint8_t>(s, bad);
      case GgufValueType::kInt8:
        return PutInt<int8_t>(s, bad);
      case GgufValueType::kUint16:
        return PutInt<uint16_t>(s, bad);
      case GgufValueType::kInt16:
        return PutInt<int16_t>(s, bad);
      case GgufValueType::kUint32:
        return PutInt<uint32_t>(s, bad);
      case GgufValueType::kInt32:
        return PutInt<int32_t>(s, bad);
      case GgufValueType::kUint64:
        return PutInt<uint64_t>(s, bad);
      case GgufValueType::kInt64:
        return PutInt<int64_t>(s, bad);
      case GgufValueType::kFloat32:
      case GgufValueType::kFloat64: {
        double d;
        if (const auto* f = std::get_if<double>(&s))
          d = *f;
        else if (const auto* u = std::get_if<uint64_t>(&s))
          d = static_cast<double>(*u);
        else if (const auto* i = std::get_if<int64_t>(&s))
          d = static_cast<double>(*i);
        else
          return bad("is not a number, as needed by");
        if (t == GgufValueType::kFloat32)
          Put<float>(static_cast<float>(d));
        else
          Put<double>(d);
        return OkStatus();
      }
      case GgufValueType::kBool: {
        const auto* b = std::get_if<bool>(&s);
        if (b == nullptr) return bad("is not a bool, as needed by");
        Put<uint8_t>(*b ? 1 : 0);
        return OkStatus();
      }
      case GgufValueType::kString: {
        const auto* str = std::get_if<std::string>(&s);
        if (str == nullptr) return bad("is not a string, as needed by");
        PutString(*str);
        return OkStatus();
      }
      case GgufValueType::kArray:
        break;
    }
    return bad("cannot be nested in an array of");
  }

 private:
  template <typename T, typename Bad>
  Status PutInt(const GgufScalar& s, const Bad& bad) {
    using L = std::numeric_limits<T>;
    if (const auto* u = std::get_if<uint64_t>(&s)) {
      if (*u > static_cast<uint64_t>(L::max())) return bad("is out of range for");
      Put<T>(static_cast<T>(*u));
      return OkStatus();
    }
    if (const auto* i = std::get_if<int64_t>(&s)) {
      bool fits = *i >= 0 ? static_cast<uint64_t>(*i) <= static_cast<uint64_t>(L::max())
                          : L::is_signed && *i >= static_cast<int64_t>(L::min());
      if (!fits) return bad("is out of range for");
      Put<T>(static_cast<T>(*i));
      return OkStatus();
    }
    return bad("is not an integer, as needed by");
  }

  std::vector<uint8_t> out_;
};

// Closes and (unless released) removes a temporary file.

}  // namespace

void GgufWriter::SetStringArray(std::string key, const std::vector<std::string>& items) {
  std::vector<GgufScalar> v(items.begin(), items.end());
  Set(std::move(key), GgufValue::Array(GgufValueType::kString, std::move(v)));
}

void GgufWriter::SetIntArray(std::string key, GgufValueType elem,
                             const std::vector<int64_t>& items) {
  std::vector<GgufScalar> v;
  v.reserve(items.size());
  // Unsigned element types hold uint64_t, as the reader produces, so that a
  // written and re-read value compares equal.
  const bool is_unsigned = elem == GgufValueType::kUint8 || elem == GgufValueType::kUint16 ||
                           elem == GgufValueType::kUint32 || elem == GgufValueType::kUint64;
  for (int64_t i : items) {
    if (is_unsigned && i >= 0)
      v.emplace_back(static_cast<uint64_t>(i));
    else
      v.emplace_back(i);
  }
  Set(std::move(key), GgufValue::Array(elem, std::move(v)));
}

Status GgufWriter::SetAlignment(uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (1u << 30)) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("alignment {} is not a power of two in 1..2^30", alignment));
  }
  SetU32("general.alignment", alignment);
  return OkStatus();
}

uint64_t GgufWriter::alignment() const {
  auto a = CheckedAlignment();
  return a.ok() ? *a : kGgufDefaultAlignment;
}

Result<uint64_t> GgufWriter::CheckedAlignment() const {
  if (!metadata_.Has("general.alignment")) return kGgufDefaultAlignment;
  auto a = metadata_.GetUint("general.alignment");
  if (!a || *a == 0 || (*a & (*a - 1)) != 0 || *a > (1u << 30)) {
    return Error(ErrorKind::kInvalidArgument,
                 "general.alignment must be an integer power of two (at most 2^30)");
  }
  return *a;
}

Status GgufWriter::AddTensor(std::string name, std::vector<int64_t> ne, uint32_t type,
                             GgufChunkFiller fill) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorKind::kInvalidArgument, fmt::format("tensor '{}': {}", name, why));
  };
  if (name.size() > kGgufMaxTensorNameBytes) {
    return bad(fmt::format("name longer than {} bytes", kGgufMaxTensorNameBytes));
  }
  if (names_.count(name)) return bad("duplicate tensor name");
  // Zero dimensions (a scalar) is legal in GGUF and accepted by the reader.
  if (ne.size() > kGgufMaxDims) return bad("has more than 4 dimensions");
  uint64_t n = 1;
  for (int64_t d : ne) {
    auto p = d > 0 ? CheckedMul(n, static_cast<uint64_t>(d)) : std::nullopt;
    if (!p) return bad("dimensions must be >= 1 and their product must fit in 64 bits");
    n = *p;
  }
  auto info = GgmlTypeById(type);
  if (!info) return bad(fmt::format("unknown ggml type id {}", type));
  const uint64_t ne0 = ne.empty() ? 1 : static_cast<uint64_t>(ne[0]);
  auto row = GgmlRowBytes(*info, ne0);
  auto bytes = row ? CheckedMul(*row, n / ne0) : std::nullopt;
  if (!bytes) {
    return bad(fmt::format("ne[0]={} is not a multiple of block size {} of {}", ne0,
                           info->block_size, info->name));
  }
  names_.insert(name);
  tensors_.push_back(Tensor{std::move(name), std::move(ne), type, *bytes, std::move(fill)});
  return OkStatus();
}

Status GgufWriter::AddTensor(std::string name, std::vector<int64_t> ne, uint32_t type,
                             std::vector<uint8_t> data) {
  auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  GgufChunkFiller fill = [shared](uint64_t offset, std::span<uint8_t> chunk) -> Status {
    std::memcpy(chunk.data(), shared->data() + offset, chunk.size());
    return OkStatus();
  };
  uint64_t given = shared->size();
  std::string n = name;
  MOETUNE_TRY(AddTensor(std::move(name), std::move(ne), type, std::move(fill)));
  if (tensors_.back().n_bytes != given) {
    uint64_t want = tensors_.back().n_bytes;
    names_.erase(tensors_.back().name);
    tensors_.pop_back();
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("tensor '{}': {} data bytes given, its shape and type need {}", n,
                             given, want));
  }
  return OkStatus();
}

Status GgufWriter::AddTensor(std::string name, std::vector<int64_t> ne, uint32_t type) {
  return AddTensor(std::move(name), std::move(ne), type,
                   [](uint64_t, std::span<uint8_t> chunk) -> Status {
                     std::fill(chunk.begin(), chunk.end(), uint8_t{0});
                     return OkStatus();
                   });
}

Result<std::vector<uint8_t>> GgufWriter::HeaderBytes() const {
  MOETUNE_ASSIGN_OR_RETURN(const uint64_t align, CheckedAlignment());
  Encoder e;
  e.bytes().insert(e.bytes().end(), {'G', 'G', 'U', 'F'});
  e.Put<uint32_t>(3);
  e.Put<uint64_t>(tensors_.size());
  e.Put<uint64_t>(metadata_.size());
  for (const auto& [key, v] : metadata_.entries()) {
    e.PutString(key);
    e.Put<uint32_t>(static_cast<uint32_t>(v.type));
    if (v.type != GgufValueType::kArray) {
      MOETUNE_TRY(e.PutScalar(v.type, v.scalar, key));
      continue;
    }
    if (v.array_elided || v.array.size() != v.array_count) {
      return Error(ErrorKind::kInvalidArgument,
                   fmt::format("metadata key '{}': array elements were not kept when reading "
                               "(array_elided); re-read with keep_large_arrays to write it",
                               key));
    }
    e.Put<uint32_t>(static_cast<uint32_t>(v.array_type));
    e.Put<uint64_t>(v.array.size());
    for (const auto& item : v.array) MOETUNE_TRY(e.PutScalar(v.array_type, item, key));
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    e.PutString(t.name);
    e.Put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) e.Put<int64_t>(d);
    e.Put<uint32_t>(t.type);
    e.Put<uint64_t>(offset);
    auto next = CheckedAdd(offset, t.n_bytes);
    next = next ? CheckedAlignUp(*next, align) : std::nullopt;
    if (!next) return Error(ErrorKind::kInvalidArgument, "tensor data exceeds 2^64 bytes");
    offset = *next;
  }
  e.bytes().resize(*CheckedAlignUp(e.bytes().size(), align), 0);
  return std::move(e.bytes());
}

Status GgufWriter::Emit(const Sink& sink) const {
  MOETUNE_ASSIGN_OR_RETURN(std::vector<uint8_t> header, HeaderBytes());
  MOETUNE_TRY(sink(header));
  const uint64_t align = alignment();  // valid: HeaderBytes checked it
  std::vector<uint8_t> buffer;
  const std::vector<uint8_t> zeros(align, 0);
  for (const auto& t : tensors_) {
    buffer.resize(static_cast<size_t>(std::min(t.n_bytes, kChunkBytes)));
    for (uint64_t done = 0; done < t.n_bytes;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(buffer.size(), t.n_bytes - done));
      std::span<uint8_t> chunk(buffer.data(), n);
      auto s = t.fill(done, chunk);
      if (!s.ok()) return s.take_error().Context(fmt::format("tensor '{}' data", t.name));
      MOETUNE_TRY(sink(chunk));
      done += n;
    }
    uint64_t pad = *CheckedAlignUp(t.n_bytes, align) - t.n_bytes;
    MOETUNE_TRY(sink(std::span<const uint8_t>(zeros.data(), static_cast<size_t>(pad))));
  }
  return OkStatus();
}

Result<std::vector<uint8_t>> GgufWriter::ToBytes() const {
  std::vector<uint8_t> out;
  MOETUNE_TRY(Emit([&](std::span<const uint8_t> b) -> Status {
    out.insert(out.end(), b.begin(), b.end());
    return OkStatus();
  }));
  return out;
}

Status GgufWriter::WriteAtomically(const std::string& path,
                                   const std::vector<std::string>& inputs) const {
  OutputFileOptions options;
  options.inputs = inputs;
  MOETUNE_ASSIGN_OR_RETURN(auto file, OutputFile::Open(path, options));
  MOETUNE_TRY(Emit([&](std::span<const uint8_t> b) { return file->Write(b); }));
  return file->Commit();
}

}  // namespace moetune
