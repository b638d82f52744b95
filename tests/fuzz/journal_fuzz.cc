// libFuzzer target for the tune journal reader (a file on disk that a crash,
// a full disk or a person may have damaged). Properties: no crash, no
// sanitizer report; an accepted journal has whole lines only after opening.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

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
  auto j = Journal::Open(path, id);
  if (j.ok()) (void)(*j)->results().size();
  ::unlink(path);
  return 0;
}
