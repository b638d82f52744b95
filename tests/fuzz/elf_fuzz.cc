// libFuzzer target for the ELF reader (util/elf.h) that tells which backends
// an engine build links in. Engine files are untrusted: beyond "no crash, no
// sanitizer report, no exception":
//  - every symbol returned starts with the prefix asked for, sorted and unique;
//  - parsing is deterministic (the same bytes twice give the same result).
// Seeds: tests/fuzz/corpus/elf/ (images laid out like a shared build's tool, a
// library with a run path, and a static executable with a symbol table).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "util/elf.h"

namespace {

void Check(bool ok, const char* what) { moetune::fuzz::Check(ok, "elf_fuzz", what); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto a = ParseElfDynamic(MemoryElfReader(bytes));
  const auto b = ParseElfDynamic(MemoryElfReader(bytes));
  Check(a.ok() == b.ok(), "deterministic");
  if (a.ok() && b.ok()) Check(a->needed == b->needed && a->run_path == b->run_path, "same result");
  if (a.ok()) {
    for (const auto& p : a->run_path) Check(!p.empty(), "run path entries are not empty");
  }
  const auto s = ParseElfSymbols(MemoryElfReader(bytes), "ggml_backend_");
  if (s.ok()) {
    Check(std::is_sorted(s->begin(), s->end()), "sorted");
    Check(std::adjacent_find(s->begin(), s->end()) == s->end(), "unique");
    for (const auto& name : *s) Check(name.starts_with("ggml_backend_"), "prefix");
  }
  return 0;
}
