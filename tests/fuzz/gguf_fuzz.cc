// libFuzzer target for the GGUF header parser (architecture.md rule 5).
// Properties checked beyond "no crash, no sanitizer report":
//  - an accepted header satisfies the reader's documented invariants
//    (alignment, data ranges inside the file, no overlap, dims, sizes);
//  - an accepted header written back by GgufWriter parses again to the same
//    keys, types and tensors (reader and writer agree on the format).
// Seeds: tests/fuzz/corpus/gguf/*.seed (small valid GGUF files made by GgufWriter;
// not named .gguf because .gitignore excludes model files).

#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz_check.h"
#include "gguf/ggml_type.h"
#include "gguf/reader.h"
#include "gguf/split.h"
#include "gguf/writer.h"
#include "util/checked.h"

namespace {

using namespace moetune;

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "gguf_fuzz", what); }

void CheckInvariants(const GgufFile& f, uint64_t file_size) {
  Check(f.alignment != 0 && (f.alignment & (f.alignment - 1)) == 0, "alignment power of two");
  Check(f.data_offset % f.alignment == 0, "data offset aligned");
  for (const auto& t : f.tensors) {
    Check(t.name.size() <= kGgufMaxTensorNameBytes, "name cap");
    Check(t.ne.size() <= kGgufMaxDims, "n_dims cap");
    for (int64_t d : t.ne) Check(d > 0, "positive dims");
    Check(t.offset % f.alignment == 0, "tensor offset aligned");
    auto start = CheckedAdd(f.data_offset, t.offset);
    auto end = start ? CheckedAdd(*start, t.n_bytes) : std::nullopt;
    Check(end.has_value() && *end <= file_size, "tensor data inside file");
    auto info = GgmlTypeById(t.type);
    Check(info.has_value(), "known type");
  }
  for (const auto& [key, v] : f.metadata.entries()) {
    Check(key.size() <= kGgufMaxKeyBytes, "key cap");
    if (v.type == GgufValueType::kArray) {
      Check(v.array_elided ? v.array.empty() : v.array.size() == v.array_count, "array count");
    }
  }
}

void CheckRoundTrip(const GgufFile& f) {
  if (f.alignment > 4096) return;  // legal, but the re-written header would be huge
  GgufWriter w;
  for (const auto& [key, v] : f.metadata.entries()) {
    if (v.array_elided) return;  // elements were not kept, so cannot be re-written
    w.Set(key, v);
  }
  uint64_t data_bytes = 0;
  for (const auto& t : f.tensors) {
    Check(w.AddTensor(t.name, t.ne, t.type).ok(), "writer accepts a tensor the reader accepted");
    data_bytes += (t.n_bytes + f.alignment - 1) / f.alignment * f.alignment;
  }
  auto header = w.HeaderBytes();
  if (!header.ok()) {
    // Only a metadata value the writer deems out of range may be refused.
    Check(header.error().kind() == ErrorKind::kInvalidArgument, "writer error kind");
    return;
  }
  auto again = ParseGgufHeader(*header, header->size() + data_bytes);
  Check(again.ok(), "re-written header parses");
  Check(again->metadata.size() == f.metadata.size(), "same key count");
  for (size_t i = 0; i < f.metadata.size(); ++i) {
    const auto& [k1, v1] = f.metadata.entries()[i];
    const auto& [k2, v2] = again->metadata.entries()[i];
    Check(k1 == k2 && v1.type == v2.type && v1.array_count == v2.array_count, "same entry");
  }
  Check(again->tensors.size() == f.tensors.size(), "same tensor count");
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    const auto& a = f.tensors[i];
    const auto& b = again->tensors[i];
    Check(a.name == b.name && a.ne == b.ne && a.type == b.type && a.n_bytes == b.n_bytes,
          "same tensor");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  // Small arrays elided too, so that the skip paths see as much input as the keep paths.
  GgufReadOptions elide;
  elide.max_array_elements = 4;
  auto elided = ParseGgufHeader(bytes, size, elide);
  auto full = ParseGgufHeader(bytes, size);
  Check(elided.ok() == full.ok(), "elision does not change validity");
  if (!full.ok()) return 0;
  CheckInvariants(full.value(), size);
  CheckInvariants(elided.value(), size);
  CheckRoundTrip(full.value());
  std::vector<GgufFile> parts;
  parts.push_back(std::move(full).value());
  (void)AssembleGgufModel(std::move(parts));
  return 0;
}
