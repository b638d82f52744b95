#include "gguf/split.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace moetune {
namespace {

// The largest count %05d can spell, and what split.count (u16) can hold anyway.
constexpr uint32_t kMaxParts = 65535;

std::optional<uint32_t> ParseDigits(std::string_view s) {
  if (s.size() != 5) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

std::string PartLabel(const GgufFile& f, size_t i, size_t n) {
  return fmt::format("split part {} of {} ({})", i + 1, n, f.path.empty() ? "<memory>" : f.path);
}

Error Inconsistent(const GgufFile& f, size_t i, size_t n, const std::string& what) {
  return Error(ErrorKind::kFormat,
               fmt::format("{}: {}; the parts do not belong together: re-download or re-split "
                           "the model so that every part comes from the same llama-gguf-split run",
                           PartLabel(f, i, n), what));
}

}  // namespace

std::string GgufSplitPath(std::string_view prefix, uint32_t index, uint32_t count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, index + 1, count);
}

std::optional<GgufSplitName> ParseGgufSplitPath(std::string_view path) {
  constexpr std::string_view kSuffix = ".gguf";
  // "-00002-of-00003.gguf" is 20 characters.
  if (path.size() < 20 || path.substr(path.size() - kSuffix.size()) != kSuffix) return std::nullopt;
  std::string_view tail = path.substr(path.size() - 20);
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-") return std::nullopt;
  auto number = ParseDigits(tail.substr(1, 5));
  auto count = ParseDigits(tail.substr(10, 5));
  if (!number || !count || *number == 0 || *number > *count) return std::nullopt;
  return GgufSplitName{std::string(path.substr(0, path.size() - 20)), *number - 1, *count};
}

Result<GgufModel> AssembleGgufModel(std::vector<GgufFile> parts) {
  if (parts.empty()) return Error(ErrorKind::kInternal, "AssembleGgufModel: no parts");
  const size_t n = parts.size();
  const Metadata& first = parts[0].metadata;
  if (n > 1 || first.Has(kSplitCountKey)) {
    auto total = first.GetUint(kSplitTensorsCountKey);
    uint64_t seen = 0;
    for (size_t i = 0; i < n; ++i) {
      const Metadata& m = parts[i].metadata;
      auto count = m.GetUint(kSplitCountKey);
      auto no = m.GetUint(kSplitNoKey);
      if (!count || *count != n) {
        return Inconsistent(parts[i], i, n,
                            fmt::format("{} is {}, expected {}", kSplitCountKey,
                                        count ? std::to_string(*count) : "missing", n));
      }
      if (!no || *no != i) {
        return Inconsistent(parts[i], i, n,
                            fmt::format("{} is {}, expected {} (0-based)", kSplitNoKey,
                                        no ? std::to_string(*no) : "missing", i));
      }
      auto part_total = m.GetUint(kSplitTensorsCountKey);
      if (part_total && total && *part_total != *total) {
        return Inconsistent(
            parts[i], i, n,
            fmt::format("{} is {} but part 1 says {}", kSplitTensorsCountKey, *part_total, *total));
      }
      seen += parts[i].tensors.size();
    }
    if (total && seen != *total) {
      return Inconsistent(parts[0], 0, n,
                          fmt::format("{} says the model has {} tensors but the {} parts hold {}",
                                      kSplitTensorsCountKey, *total, n, seen));
    }
  }
  GgufModel model;
  std::unordered_map<std::string, size_t> owner;
  for (size_t i = 0; i < n; ++i) {
    for (TensorInfo t : parts[i].tensors) {
      auto [it, inserted] = owner.emplace(t.name, i);
      if (!inserted) {
        return Inconsistent(parts[i], i, n,
                            fmt::format("tensor '{}' is also in part {}", t.name, it->second + 1));
      }
      t.part = static_cast<uint32_t>(i);
      model.tensors.push_back(std::move(t));
    }
  }
  model.parts = std::move(parts);
  return model;
}

Result<GgufModel> OpenGgufModel(const std::string& path, const GgufReadOptions& options) {
  MOETUNE_ASSIGN_OR_RETURN(GgufFile given, ReadGgufFile(path, options));
  auto count = given.metadata.GetUint(kSplitCountKey);
  if (!count || *count <= 1) {
    std::vector<GgufFile> one;
    one.push_back(std::move(given));
    return AssembleGgufModel(std::move(one));
  }
  auto name = ParseGgufSplitPath(path);
  if (!name) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}: {} is {}, but the file name does not follow "
                             "NAME-00001-of-{:05d}.gguf, so the other parts cannot be found; "
                             "keep the names llama-gguf-split gave the parts",
                             path, kSplitCountKey, *count, *count));
  }
  if (name->count != *count) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}: the file name says {} parts but {} is {}; the file was renamed "
                             "or belongs to another split: restore the original part names",
                             path, name->count, kSplitCountKey, *count));
  }
  auto no = given.metadata.GetUint(kSplitNoKey);
  if (!no || *no != name->index) {
    return Error(ErrorKind::kFormat,
                 fmt::format("{}: the file name says part {} but {} is {} (0-based, expected {}); "
                             "restore the original part names",
                             path, name->index + 1, kSplitNoKey,
                             no ? std::to_string(*no) : "missing", name->index));
  }
  std::vector<GgufFile> parts;
  parts.reserve(name->count);
  for (uint32_t i = 0; i < name->count; ++i) {
    if (i == name->index) {
      // i equals name->index exactly once, so `given` is moved once.
      parts.push_back(std::move(given));  // NOLINT(bugprone-use-after-move)
      continue;
    }
    std::string part_path = GgufSplitPath(name->prefix, i, name->count);
    auto part = ReadGgufFile(part_path, options);
    if (!part.ok()) {
      Error e = part.take_error();
      if (e.kind() == ErrorKind::kNotFound) {
        return Error(ErrorKind::kNotFound,
                     fmt::format("split part {} of {} is missing: expected {}; download all {} "
                                 "parts into the same directory",
                                 i + 1, name->count, part_path, name->count));
      }
      return std::move(e).Context(fmt::format("split part {} of {}", i + 1, name->count));
    }
    parts.push_back(std::move(part).value());
  }
  return AssembleGgufModel(std::move(parts));
}

Result<std::vector<std::string>> WriteGgufSplit(const GgufWriter& model, std::string_view prefix,
                                                uint32_t n_parts) {
  const auto& tensors = model.tensors();
  if (n_parts == 0 || n_parts > kMaxParts) {
    return Error(ErrorKind::kInvalidArgument,
                 fmt::format("split into {} parts: the count must be 1..{}", n_parts, kMaxParts));
  }
  if (tensors.size() > static_cast<size_t>(INT32_MAX)) {
    return Error(ErrorKind::kInvalidArgument, "too many tensors for split.tensors.count (i32)");
  }
  const size_t per_part = (tensors.size() + n_parts - 1) / n_parts;
  std::vector<std::string> written;
  auto cleanup = [&] {
    for (const auto& p : written) ::unlink(p.c_str());
  };
  for (uint32_t i = 0; i < n_parts; ++i) {
    GgufWriter part;
    if (i == 0) {
      for (const auto& [key, value] : model.metadata().entries()) part.Set(key, value);
    }
    if (model.alignment() != kGgufDefaultAlignment) {
      MOETUNE_TRY(part.SetAlignment(static_cast<uint32_t>(model.alignment())));
    }
    part.Set(std::string(kSplitNoKey), GgufValue::Scalar(GgufValueType::kUint16, uint64_t{i}));
    part.Set(std::string(kSplitCountKey),
             GgufValue::Scalar(GgufValueType::kUint16, uint64_t{n_parts}));
    part.SetI32(std::string(kSplitTensorsCountKey), static_cast<int32_t>(tensors.size()));
    const size_t begin = std::min(tensors.size(), i * per_part);
    const size_t end = std::min(tensors.size(), begin + per_part);
    for (size_t t = begin; t < end; ++t) {
      MOETUNE_TRY(part.AddTensor(tensors[t].name, tensors[t].ne, tensors[t].type, tensors[t].fill));
    }
    std::string path = GgufSplitPath(prefix, i, n_parts);
    auto s = part.WriteAtomically(path);
    if (!s.ok()) {
      cleanup();
      return s.take_error().Context(fmt::format("writing split part {} of {}", i + 1, n_parts));
    }
    written.push_back(std::move(path));
  }
  return written;
}

}  // namespace moetune
