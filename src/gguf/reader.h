#pragma once
/// Hardened GGUF header reader (docs/architecture.md, Conventions: model files are untrusted).
///
/// File layout (GGUF v2/v3, little-endian; v1 used 32-bit counts and is refused):
///
///   offset 0  +--------------------------------------------------+
///             | magic      4 bytes  "GGUF"                       |
///             | version    u32      2 or 3                       |
///             | n_tensors  u64 (i64 upstream)                    |
///             | n_kv       u64 (i64 upstream)                    |
///             +--------------------------------------------------+
///             | n_kv x metadata entry:                           |
///             |   key      string = u64 length + bytes (no NUL)  |
///             |   type     u32 (GgufValueType)                   |
///             |   value    scalar of that type, or for arrays:   |
///             |            elem type u32, count u64, elements    |
///             +--------------------------------------------------+
///             | n_tensors x tensor info:                         |
///             |   name     string (< 64 bytes, GGML_MAX_NAME)    |
///             |   n_dims   u32 (<= 4)                            |
///             |   ne       n_dims x i64 (ne[0] = row length)     |
///             |   type     u32 (ggml type id)                    |
///             |   offset   u64, relative to the data section,    |
///             |            a multiple of the alignment           |
///             +--------------------------------------------------+
///             | padding to general.alignment (default 32)        |
///   data_off  +--------------------------------------------------+
///             | tensor data (never read here)                    |
///             +--------------------------------------------------+
///
/// Split models: NAME-00001-of-00003.gguf ... each part is a complete GGUF with
/// split.no (u16, 0-based), split.count (u16) and split.tensors.count (i32, the
/// model's total); only part 1 carries the model's metadata (llama-gguf-split).
///
/// Hardening rules applied while parsing:
///  - every read goes through a bounded reader that knows the bytes remaining and
///    reports the byte offset and the field on failure;
///  - string caps: keys 64 KiB, tensor names 63 bytes (llama.cpp's limit),
///    string values kGgufMaxStringBytes (16 MiB; the largest real chat templates
///    are ~100 KiB, so this never rejects a real model but bounds memory);
///  - every count (entries, tensors, array elements) must fit in the bytes that
///    remain at its minimum encoded size before anything is allocated, and
///    reservations are additionally capped, so memory grows only with bytes read;
///  - at most kGgufMaxEntries metadata entries and kGgufMaxTensors tensors;
///  - every size and offset is computed with checked add/multiply;
///  - arrays longer than GgufReadOptions::max_array_elements (tokenizer vocab and
///    merges) are validated and skipped: array_count kept, array_elided set.
/// Only the header is read, with buffered pread()s: a 100 GB model's metadata
/// is read in milliseconds and tensor data is never touched.

#include <cstdint>
#include <span>
#include <string>

#include "gguf/gguf.h"
#include "util/result.h"

namespace moetune {

/// Caps on untrusted lengths (see the file comment for why these values).
inline constexpr uint64_t kGgufMaxKeyBytes = uint64_t{64} * 1024;
inline constexpr uint64_t kGgufMaxTensorNameBytes = 63;  // GGML_MAX_NAME - 1
inline constexpr uint64_t kGgufMaxStringBytes = uint64_t{16} * 1024 * 1024;
inline constexpr uint32_t kGgufMaxDims = 4;            // GGML_MAX_DIMS
inline constexpr uint64_t kGgufDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
/// Caps on counts, so that a file of tiny entries cannot make the in-memory
/// form (~100+ bytes per entry) many times larger than the file. Real models
/// have ~50 metadata entries and at most a few thousand tensors.
inline constexpr uint64_t kGgufMaxEntries = 1 << 16;
inline constexpr uint64_t kGgufMaxTensors = 1 << 20;

struct GgufReadOptions {
  /// Arrays with more elements than this are validated but not kept
  /// (GgufValue::array_elided). 65536 keeps every hyperparameter array and
  /// drops tokenizer vocabularies and merges, which moetune never needs.
  uint64_t max_array_elements = 65536;
  /// Keep every array whatever its length (memory still bounded by the file).
  bool keep_large_arrays = false;
};

/// Parses a GGUF header held in memory. `bytes` is the start of the file (at
/// least the whole header; the whole file in tests and the fuzzer) and
/// `file_size` the size of the whole file, against which tensor data ranges are
/// checked. `name` labels error messages (a path, or "<memory>").
/// Errors: kFormat (malformed), kUnsupported (version, unknown ggml type),
/// kInvalidArgument (file_size < bytes.size()).
Result<GgufFile> ParseGgufHeader(std::span<const uint8_t> bytes, uint64_t file_size,
                                 const GgufReadOptions& options = {},
                                 const std::string& name = "<memory>");

/// Reads the header of one GGUF file (one part of a split model is read as a
/// file of its own; see OpenGgufModel for the whole model). GgufFile::path is set.
/// Errors: kNotFound (no such file), kIo (cannot open/read), plus ParseGgufHeader's.
Result<GgufFile> ReadGgufFile(const std::string& path, const GgufReadOptions& options = {});

}  // namespace moetune
