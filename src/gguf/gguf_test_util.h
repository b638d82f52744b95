#pragma once
/// Test helpers for handcrafting GGUF bytes (valid and deliberately broken).
/// Header-only and used only by *_test.cc files.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/reader.h"
#include "util/temp_dir_test_util.h"

namespace moetune::testing {

/// Appends little-endian GGUF primitives to a byte vector.
class ByteBuilder {
 public:
  template <typename T>
  ByteBuilder& Put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    bytes.insert(bytes.end(), b, b + sizeof(T));
    return *this;
  }
  ByteBuilder& Raw(std::string_view s) {
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  ByteBuilder& Str(std::string_view s) {
    Put<uint64_t>(s.size());
    return Raw(s);
  }
  /// Magic, version, tensor count, entry count.
  ByteBuilder& Header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    Raw("GGUF");
    Put<uint32_t>(version);
    Put<uint64_t>(n_tensors);
    return Put<uint64_t>(n_kv);
  }
  ByteBuilder& KvU32(std::string_view key, uint32_t v) {
    Str(key);
    Put<uint32_t>(static_cast<uint32_t>(GgufValueType::kUint32));
    return Put<uint32_t>(v);
  }
  ByteBuilder& KvStr(std::string_view key, std::string_view v) {
    Str(key);
    Put<uint32_t>(static_cast<uint32_t>(GgufValueType::kString));
    return Str(v);
  }
  ByteBuilder& Tensor(std::string_view name, const std::vector<int64_t>& ne, uint32_t type,
                      uint64_t offset) {
    Str(name);
    Put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) Put<int64_t>(d);
    Put<uint32_t>(type);
    return Put<uint64_t>(offset);
  }
  ByteBuilder& PadTo(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }
  ByteBuilder& Zeros(size_t n) {
    bytes.insert(bytes.end(), n, 0);
    return *this;
  }

  std::vector<uint8_t> bytes;
};

inline Result<GgufFile> ParseBytes(const std::vector<uint8_t>& b, const GgufReadOptions& o = {}) {
  return ParseGgufHeader(b, b.size(), o);
}

/// A fresh, empty temporary directory removed (recursively) on destruction.

/// Asserts that r failed with `kind` and that the message holds every fragment.
template <typename T>
void ExpectError(const Result<T>& r, ErrorKind kind, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(r.ok()) << "expected an error";
  EXPECT_EQ(r.error().kind(), kind) << r.error().message();
  for (const char* p : parts) {
    EXPECT_NE(r.error().message().find(p), std::string::npos)
        << "missing '" << p << "' in: " << r.error().message();
  }
}

}  // namespace moetune::testing
