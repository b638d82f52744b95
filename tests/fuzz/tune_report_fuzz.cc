// libFuzzer target for `moetune report TUNE.json`: a tune's JSON read back
// (report/tune_reader.h) and rendered in every form. Properties beyond "no
// crash, no sanitizer report": an accepted tune has a command; its JSON is
// valid UTF-8 and reads back to the same JSON; its command reads back as its
// pick (config/server_argv.h); the text, both report formats
// and every --emit format render (emitting may refuse a command, never crash).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "config/server_argv.h"
#include "report/emit.h"
#include "report/tune_document.h"
#include "tune/tune_reader.h"
#include "util/utf8.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tune_report_fuzz invariant violated: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  auto t = TuneReportFromJson(j);
  if (!t.ok()) return 0;
  Check(!t->Command().empty(), "accepted tune has a command");
  // The command is the pick's: it reads back to the same configuration.
  Check(ParseServerArgv(t->Command()).config == t->result.best, "command reads back as the pick");
  bool replaced = false;
  const nlohmann::json again = TuneJson(*t);
  Check(IsValidUtf8(DumpJson(again, 2, &replaced)), "JSON is valid UTF-8");
  auto reread = TuneReportFromJson(again);
  Check(reread.ok(), "written JSON reads back");
  Check(TuneJson(*reread) == again, "written JSON reads back the same");
  Check(!TuneText(*t).empty(), "text rendered");
  const Report doc = TuneDocument(*t, {"moetune", "report", "fuzz.json"});
  Check(!RenderReport(doc, ReportFormat::kHtml).empty(), "HTML rendered");
  Check(!RenderReport(doc, ReportFormat::kMarkdown).empty(), "Markdown rendered");
  for (auto f : {EmitFormat::kServer, EmitFormat::kEnv, EmitFormat::kIni, EmitFormat::kCompose})
    (void)TuneEmit(*t, f);
  return 0;
}
