#include "gguf/gguf.h"

#include <fmt/format.h>

#include <limits>
#include <type_traits>

#include "util/sha256.h"

namespace moetune {

const char* GgufValueTypeName(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
      return "u8";
    case GgufValueType::kInt8:
      return "i8";
    case GgufValueType::kUint16:
      return "u16";
    case GgufValueType::kInt16:
      return "i16";
    case GgufValueType::kUint32:
      return "u32";
    case GgufValueType::kInt32:
      return "i32";
    case GgufValueType::kFloat32:
      return "f32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "str";
    case GgufValueType::kArray:
      return "arr";
    case GgufValueType::kUint64:
      return "u64";
    case GgufValueType::kInt64:
      return "i64";
    case GgufValueType::kFloat64:
      return "f64";
  }
  return "unknown";
}

namespace {

// An integer element as int64, when it is one and fits.
std::optional<int64_t> AsInt64(const GgufScalar& s) {
  if (const auto* u = std::get_if<uint64_t>(&s)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&s)) return *i;
  return std::nullopt;
}

}  // namespace

bool Metadata::Add(std::string key, GgufValue value) {
  if (index_.find(key) != index_.end()) return false;
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
  return true;
}

void Metadata::Set(std::string key, GgufValue value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  Add(std::move(key), std::move(value));
}

const GgufValue* Metadata::Find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

std::optional<uint64_t> Metadata::GetUint(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr || v->type == GgufValueType::kArray) return std::nullopt;
  if (const auto* u = std::get_if<uint64_t>(&v->scalar)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v->scalar)) {
    if (*i < 0) return std::nullopt;
    return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

std::optional<double> Metadata::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr || v->type == GgufValueType::kArray) return std::nullopt;
  if (const auto* d = std::get_if<double>(&v->scalar)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&v->scalar)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&v->scalar)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<std::string> Metadata::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr || v->type != GgufValueType::kString) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(&v->scalar)) return *s;
  return std::nullopt;
}

std::optional<bool> Metadata::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr || v->type != GgufValueType::kBool) return std::nullopt;
  if (const auto* b = std::get_if<bool>(&v->scalar)) return *b;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> Metadata::GetIntArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr || v->type != GgufValueType::kArray || v->array_elided) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(v->array.size());
  for (const auto& e : v->array) {
    auto i = AsInt64(e);
    if (!i) return std::nullopt;
    out.push_back(*i);
  }
  return out;
}

std::optional<std::vector<int64_t>> Metadata::GetPerLayer(std::string_view key,
                                                          size_t n_layer) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return std::nullopt;
  if (v->type == GgufValueType::kArray) {
    // llama.cpp's get_key_or_arr (src/llama-model-loader.cpp) demands exactly n_layer.
    auto arr = GetIntArray(key);
    if (!arr || arr->size() != n_layer) return std::nullopt;
    return arr;
  }
  auto i = AsInt64(v->scalar);
  if (!i) return std::nullopt;
  return std::vector<int64_t>(n_layer, *i);
}

namespace {

// Appends one scalar with its type, unambiguously (lengths before strings).
void AppendScalar(const GgufScalar& v, std::string* out) {
  std::visit(
      [out](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          *out += fmt::format("s{}:", x.size());
          *out += x;
        } else if constexpr (std::is_same_v<T, bool>) {
          *out += x ? "b1" : "b0";
        } else {
          *out += fmt::format("n{};", x);
        }
      },
      v);
}

}  // namespace

std::string GgufFingerprint(const GgufModel& model) {
  std::string text;
  for (const auto& [key, value] : model.metadata().entries()) {
    text += fmt::format("k{}:{}t{}", key.size(), key, static_cast<uint32_t>(value.type));
    if (value.type == GgufValueType::kArray) {
      text += fmt::format("a{}:{}:{}", static_cast<uint32_t>(value.array_type), value.array_count,
                          value.array_elided ? 1 : 0);
      for (const auto& e : value.array) AppendScalar(e, &text);
    } else {
      AppendScalar(value.scalar, &text);
    }
  }
  for (const auto& t : model.tensors) {
    text += fmt::format("T{}:{}t{}", t.name.size(), t.name, t.type);
    for (const int64_t d : t.ne) text += fmt::format(",{}", d);
  }
  return "sha256:" + Sha256Hex(text).substr(0, 16);
}

}  // namespace moetune
