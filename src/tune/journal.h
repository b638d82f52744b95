#pragma once
/// The tune journal: every measurement appended (JSON lines, fsynced) the
/// moment it completes, so that Ctrl-C or `kill -9` loses at most the run in
/// flight and running the same command again resumes without measuring again.
///
/// Format: the first line is a header
///   {"moetune_journal": 1, "model": ..., "engine": ..., "machine": ..., ...}
/// and every further line is {"result": <RunResultToJson>, "at": "<UTC time>"}.
/// A journal written for another model, engine or machine is refused with a
/// message that names what differs. A line torn by a crash is cut off.

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
  /// Appends and flushes to disk.
  Status Append(const RunResult& result);

  const std::vector<RunResult>& results() const { return results_; }
  std::size_t resumed() const { return resumed_; }
  const std::string& path() const { return path_; }

  /// The key under which results of equal configurations are matched.
  static std::string Key(const RunConfig& config);

 private:
  Journal() = default;
  std::string path_;
  int fd_ = -1;
  std::vector<RunResult> results_;
  std::map<std::string, std::vector<std::size_t>> by_key_;
  std::size_t resumed_ = 0;
};

}  // namespace moetune
