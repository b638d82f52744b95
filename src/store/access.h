#pragma once
/// Whether a user can read a model file, and if not, exactly why: which folder
/// or file stops them, its owner, group and mode. Computed from the modes along
/// the path and the user's identity (as the kernel's permission check does),
/// so the answer is the same for the real user and for a test's made-up one.
///
/// The known trap this names: Ollama's Linux service keeps its models under
/// /usr/share/ollama, the home of the `ollama` user, which useradd creates
/// owner-only (HOME_MODE 0700 on current Debian and Ubuntu), and its blobs
/// may be 0600; another user then gets only "Permission denied".

#include <cstdint>
#include <string>

#include "store/places.h"

namespace moetune {

enum class AccessStatus {
  kReadable,
  kMissing,     // nothing at the path (or a folder on the way is missing)
  kDangling,    // a symbolic link whose target is missing
  kNotRegular,  // a folder, FIFO, device or socket, not a file
  kNoSearch,    // a folder on the way may not be entered by this user
  kNoRead,      // the file itself may not be read by this user
  kError,       // the system refused for another reason (detail says which)
};

/// The outcome of CheckAccess, with the facts about what blocks.
struct AccessCheck {
  AccessStatus status = AccessStatus::kReadable;
  std::string path;     // the path checked
  std::string blocker;  // the folder or file that stops the user (kNoSearch, kNoRead)
  uint32_t owner_uid = 0;
  uint32_t group_gid = 0;
  uint32_t mode = 0;           // permission bits of the blocker (07777)
  std::string owner;           // the owner's name (or number)
  std::string group;           // the group's name (or number)
  bool user_in_group = false;  // the user belongs to the blocker's group
  bool group_may = false;      // the group bits would let a member through
  bool blocker_is_folder = false;
  std::string detail;   // the link target (kDangling) or the system's words (kError)
  bool folder = false;  // a folder was checked (CheckFolderAccess), not a file

  bool ok() const { return status == AccessStatus::kReadable; }
};

/// Checks that `who` can open `path` for reading: every folder on the way
/// (after symbolic links are resolved) searchable, the file regular and
/// readable. Never opens the file, never blocks.
AccessCheck CheckAccess(const std::string& path, const Identity& who);

/// The same for a folder to list: every folder on the way searchable, the
/// folder itself readable and searchable (kNotRegular when it is no folder).
AccessCheck CheckFolderAccess(const std::string& folder, const Identity& who);

/// One sentence saying why (empty when readable): "the folder
/// /usr/share/ollama (owner ollama, group ollama, mode 0700) lets only its
/// owner in".
std::string DescribeAccess(const AccessCheck& check);

/// What the user can do about it (empty when readable), for a file found in
/// `kind`'s store. For Ollama's service folder: read it as that user, let the
/// ollama group in (with the commands), or copy the blob to a file of one's own.
std::string AccessFix(const AccessCheck& check, StoreKind kind);

}  // namespace moetune
