// libFuzzer target for the tuned-configuration reader of `moetune serve --from`
// and `moetune watch --from` (the JSON of tune, plan or analyze, which a person
// may edit or take from elsewhere), with the baseline and the settings taken
// from it. Properties: no crash, no exception, no sanitizer report.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "watch/baseline.h"
#include "watch/server_settings.h"
#include "watch/tuned_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto t = ParseTunedFile(text, "fuzz.json");
  if (!t.ok()) return 0;
  if (t->command_argv) (void)SettingsFromArgv(*t->command_argv);
  if (t->analysis) {
    std::vector<std::string> notes;
    for (std::optional<int> n : {std::optional<int>(), std::optional<int>(3)}) {
      auto b = BaselineFromAnalysis(*t->analysis, n, "fuzz.json", &notes);
      (void)b;
    }
  }
  return 0;
}
