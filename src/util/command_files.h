#pragma once
/// The files one command reads and writes, so that one rule holds for every
/// file a command writes (outputs, reports, the journal, the machine profile,
/// server logs): never a file the command reads, never another output of the
/// same command. Readers of files a person names (the model and its split
/// parts, tune files, --from, --config, --measurements, logs, profiles) note
/// them as inputs; every writer claims its file under its role ("-o",
/// "--report", "--journal", ...) before writing anything. Whichever comes
/// second is refused with a message that names both.
///
/// The record is process-wide (one command per process) and active only while
/// a CommandFilesScope lives: main() opens one around the command, a unit test
/// opens its own. Without a scope nothing is recorded and nothing refused, so
/// library code and tests that write one file twice behave as before.
///
/// Files are compared by device and inode when they exist (a symbolic or hard
/// link to the same file is the same file) and else by their absolute path
/// with the folder's links resolved.

#include <string>
#include <string_view>

#include "util/result.h"

namespace moetune {

/// Turns the record on for its lifetime (not nestable: a second scope while
/// one is open is a programming error and aborts).
class CommandFilesScope {
 public:
  CommandFilesScope();
  ~CommandFilesScope();
  CommandFilesScope(const CommandFilesScope&) = delete;
  CommandFilesScope& operator=(const CommandFilesScope&) = delete;
};

/// Records `path` as a file this command reads; `what` names it in messages
/// ("the model", "the --from file"). Refused when it is already an output of
/// this command (reading a file being written gives nonsense).
Status NoteInputFile(const std::string& path, std::string_view what);

/// Records `path` as the file written for `role` ("-o", "--report", ...);
/// character devices and FIFOs are not recorded (they are written through).
/// Refused when it is an input (unless the input was noted as `may_replace`:
/// the machine profile that calibrate reads and updates) or the file of another
/// role. Claiming the same file again for the same role is fine (a file
/// rewritten as a command goes on).
Status ClaimOutputFile(const std::string& path, std::string_view role,
                       std::string_view may_replace = {});

/// The output at `path` is complete and this command writes it no more: it
/// may be read from now on (the demo writes its model, then plans and tunes
/// it). Reading it makes it an input, so writing it again is refused.
void ReleaseOutputFile(const std::string& path);

}  // namespace moetune
