// libFuzzer target for the tuned-configuration reader of `moetune serve --from`
// and `moetune watch --from` (the JSON of tune, plan or analyze, which a person
// may edit or take from elsewhere), with the baseline and the settings taken
// from it. Properties: no crash, no exception, no sanitizer report; the
// configuration a command says, written by the one argv writer and read
// again, is a fixed point after one round (config/server_argv.h).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "config/server_argv.h"
#include "watch/baseline.h"
#include "watch/serve_command.h"
#include "watch/server_settings.h"
#include "watch/tuned_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto t = ParseTunedFile(text, "fuzz.json");
  if (!t.ok()) return 0;
  if (t->command_argv) {
    (void)SettingsFromArgv(*t->command_argv);
    std::vector<std::string> dropped;
    const ServerConfig once = ConfigFromCommand(*t->command_argv, &dropped);
    const ServerConfig twice = ParseServerArgv(ServerArgv(once)).config;
    if (!(ParseServerArgv(ServerArgv(twice)).config == twice)) {
      std::fprintf(stderr, "tuned_file_fuzz invariant violated: argv round trip\n");
      std::abort();
    }
  }
  if (t->analysis) {
    std::vector<std::string> notes;
    for (std::optional<int> n : {std::optional<int>(), std::optional<int>(3)}) {
      auto b = BaselineFromAnalysis(*t->analysis, n, "fuzz.json", &notes);
      (void)b;
    }
  }
  return 0;
}
