#pragma once
/// The tune journal: every measurement appended (JSON lines, fsynced) the
/// moment it completes, so that Ctrl-C or `kill -9` loses at most the run in
/// flight and running the same command again resumes without measuring again.
///
/// Format: the first line is a header
///   {"moetune_journal": 1, "model": ..., "engine": ..., "machine": ..., ...}
/// and every further line is {"result": <RunResultToJson>, "at": "<UTC time>"},
/// or a record of another kind: {"kind": "budget", "budget": {...}, "at": ...}
/// when the time budget ended a tune (BudgetStop). A reader skips the records
/// of a kind it does not use (a resumed tune measures from the results only).
/// Older readers count such a line as unreadable and skip it, so a journal
/// with one still loads there.
///
/// Rules (a journal is a file the user may have named by mistake, and two
/// tunes may name the same one):
/// - The path passes the rule of every output (util/output_file.h): a regular
///   file or a new one, never the model or another output of the command.
/// - An existing file's header (format version 1, the same model, engine and
///   machine) is checked before anything is written to it; a file that is not
///   a journal, or a journal of another version or identity, is refused and
///   left exactly as it was. Records are only ever appended.
/// - The journal is locked while open (a POSIX record lock); a second tune on
///   it is refused with the process that holds it.
/// - Each record is written whole (one write of the line, cut back off when
///   the write fails part way) and fsynced. Torn or unreadable records (from
///   a crash, a full disk, older writers) are skipped and counted in a note.
/// - A failure whose engine was killed by a signal from outside (SIGKILL,
///   SIGTERM, ...) says nothing about the configuration: it is kept in the
///   file but measured again on resume.
/// - A read-only journal is read and resumed from; new records are not saved
///   (a note says so).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/run_config.h"
#include "util/result.h"

namespace moetune {

/// What a journal's measurements are valid for.
struct JournalIdentity {
  std::string model;    // fingerprint of the model file (name, size, tensors)
  std::string engine;   // "llama.cpp <version> (<dir>)", or "sim seed=... machine=..."
  std::string machine;  // fingerprint of the machine (or the what-if machine)
};

/// Why the time budget ended a tune: the run that was not started (its
/// expected time did not fit in what was left), or the one the engine ended
/// at the limit.
struct BudgetStop {
  std::string run;              // "threads N=20 t=4 ub=512"
  double expected_seconds = 0;  // its expected time (not started)
  double left_seconds = 0;      // the budget left when it was to start
  double budget_seconds = 0;
  bool ended = false;  // started and ended at the limit, instead of not started
};

class Journal {
 public:
  /// Opens `path` (creating it with a header when absent). An existing journal
  /// must carry the same identity; `notes` says how many results were resumed.
  static Result<std::unique_ptr<Journal>> Open(const std::string& path,
                                               const JournalIdentity& identity,
                                               std::vector<std::string>* notes = nullptr);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  /// The `occurrence`-th stored result of `config` (0-based), if any.
  std::optional<RunResult> Find(const RunConfig& config, int occurrence) const;
  /// Appends and flushes to disk. The result is kept in memory (Find) even
  /// when it could not be saved; the error says why and unsaved() counts it.
  /// A read-only journal saves nothing and returns OK (Open's note said so).
  Status Append(const RunResult& result);
  /// Records that the budget ended the tune (a "budget" record; no result).
  Status AppendBudgetStop(const BudgetStop& stop);
  /// The "budget" records read when the journal was opened.
  std::size_t budget_stops() const { return budget_stops_; }

  const std::vector<RunResult>& results() const { return results_; }
  std::size_t resumed() const { return resumed_; }
  const std::string& path() const { return path_; }
  /// True when the journal could only be opened for reading.
  bool read_only() const { return read_only_; }
  /// Results Append could not save, and the first reason.
  std::size_t unsaved() const { return unsaved_; }
  const std::optional<Error>& write_error() const { return write_error_; }

  /// The key under which results of equal configurations are matched.
  static std::string Key(const RunConfig& config);

 private:
  Journal() = default;
  Status CheckHeader(const std::string& line, const JournalIdentity& id) const;
  Status Load(const std::string& text, const JournalIdentity& id, std::vector<std::string>* notes);
  Status WriteRecord(const std::string& record);

  std::string path_;
  int fd_ = -1;
  bool read_only_ = false;
  bool needs_newline_ = false;  // the file ends in a torn line
  std::vector<RunResult> results_;
  std::map<std::string, std::vector<std::size_t>> by_key_;
  std::size_t resumed_ = 0;
  std::size_t budget_stops_ = 0;
  std::size_t unsaved_ = 0;
  std::optional<Error> write_error_;
};

}  // namespace moetune
