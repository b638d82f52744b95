// libFuzzer target for the readers of a watched server's answers
// (watch/server_api.h: /props, /slots, /metrics and error bodies): a server
// may be anything that listens on the port. Properties: no crash and no
// sanitizer report; every figure accepted is one a llama-server can report
// (slots 0 to 4096, a context and depths that are not negative).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "watch/server_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto p = ParseProps(text); p.ok()) {
    fuzz::Check(p->total_slots >= 0 && p->total_slots <= 4096, "server_answer",
                "/props total_slots out of range");
    fuzz::Check(p->n_ctx_per_slot >= 0, "server_answer", "/props n_ctx negative");
  }
  if (auto s = ParseSlots(text); s.ok()) {
    fuzz::Check(s->size() <= 4096, "server_answer", "more than 4096 slots");
    for (const auto& slot : *s) {
      fuzz::Check(slot.n_ctx >= 0, "server_answer", "/slots n_ctx negative");
      fuzz::Check(!slot.depth || *slot.depth >= 0, "server_answer", "/slots depth negative");
    }
  }
  (void)ParseMetrics(text);
  (void)ServerErrorMessage(text);
  return 0;
}
