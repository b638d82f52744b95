// libFuzzer target for the tune journal reader (a file on disk that a crash,
// a full disk or a person may have damaged, or any file named by mistake).
// Properties: no crash, no sanitizer report; a refused file is left exactly
// as it was, and an accepted one is only appended to (its bytes stay its
// first bytes).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "fuzz_check.h"
#include "tune/journal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moetune;
  char path[] = "/tmp/moetune_journal_fuzz_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return 0;
  if (::write(fd, data, size) != static_cast<ssize_t>(size)) {
    ::close(fd);
    ::unlink(path);
    return 0;
  }
  ::close(fd);
  const JournalIdentity id{"model", "engine", "machine"};
  const std::string before(reinterpret_cast<const char*>(data), size);
  {
    auto j = Journal::Open(path, id);
    if (j.ok()) (void)(*j)->results().size();
  }
  std::string after;
  if (FILE* f = std::fopen(path, "rb")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) after.append(buf, n);
    std::fclose(f);
  }
  fuzz::Check(after.compare(0, before.size(), before) == 0, "journal",
              "the journal's existing bytes were changed");
  ::unlink(path);
  return 0;
}
