#include "store/access.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace moetune {
namespace {

namespace fs = std::filesystem;

// The kernel's check (fs/namei.c generic_permission): the owner's bits for the
// owner, else the group's for a member, else the others'; root passes reads
// and folder searches regardless (CAP_DAC_READ_SEARCH).
bool Allowed(const struct stat& st, const Identity& who, mode_t user, mode_t group, mode_t other) {
  if (who.uid == 0) return true;
  if (st.st_uid == who.uid) return (st.st_mode & user) != 0;
  if (who.InGroup(st.st_gid)) return (st.st_mode & group) != 0;
  return (st.st_mode & other) != 0;
}

std::string UserName(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* out = nullptr;
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &out) == 0 && out != nullptr) {
    return out->pw_name;
  }
  return std::to_string(uid);
}

std::string GroupName(gid_t gid) {
  std::vector<char> buf(16384);
  group gr{};
  group* out = nullptr;
  if (::getgrgid_r(gid, &gr, buf.data(), buf.size(), &out) == 0 && out != nullptr) {
    return out->gr_name;
  }
  return std::to_string(gid);
}

AccessCheck Blocked(AccessCheck c, AccessStatus status, const std::string& blocker,
                    const struct stat& st, const Identity& who) {
  c.status = status;
  c.blocker = blocker;
  c.owner_uid = st.st_uid;
  c.group_gid = st.st_gid;
  c.mode = st.st_mode & 07777;
  c.owner = UserName(st.st_uid);
  c.group = GroupName(st.st_gid);
  c.user_in_group = who.InGroup(st.st_gid);
  c.blocker_is_folder = S_ISDIR(st.st_mode);
  const mode_t group_bit = status == AccessStatus::kNoSearch ? S_IXGRP : S_IRGRP;
  c.group_may = (st.st_mode & group_bit) != 0;
  return c;
}

AccessCheck Failed(AccessCheck c, AccessStatus status, std::string detail) {
  c.status = status;
  c.detail = std::move(detail);
  return c;
}

// Walks `target` (absolute, links resolved where this process could) from the
// root: every folder must be searchable by `who`, the file readable.
AccessCheck Walk(AccessCheck c, const fs::path& target, const Identity& who, bool folder) {
  fs::path cur = target.root_path();
  struct stat parent {};
  std::string parent_path;
  std::vector<fs::path> folders = {cur};
  const fs::path relative = target.relative_path();
  for (const auto& element : relative) {
    cur /= element;
    folders.push_back(cur);
  }
  folders.pop_back();  // the last element is the file itself
  for (const auto& dir : folders) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      const int e = errno;
      if (e == EACCES && !parent_path.empty()) {
        return Blocked(c, AccessStatus::kNoSearch, parent_path, parent, who);
      }
      return Failed(c, e == ENOENT ? AccessStatus::kMissing : AccessStatus::kError,
                    fmt::format("{}: {}", dir.string(), std::strerror(e)));
    }
    if (!S_ISDIR(st.st_mode)) {
      return Failed(c, AccessStatus::kMissing, dir.string() + " is not a folder");
    }
    if (!Allowed(st, who, S_IXUSR, S_IXGRP, S_IXOTH)) {
      return Blocked(c, AccessStatus::kNoSearch, dir.string(), st, who);
    }
    parent = st;
    parent_path = dir.string();
  }
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    const int e = errno;
    if (e == EACCES && !parent_path.empty()) {
      return Blocked(c, AccessStatus::kNoSearch, parent_path, parent, who);
    }
    return Failed(c, e == ENOENT ? AccessStatus::kMissing : AccessStatus::kError,
                  fmt::format("{}: {}", target.string(), std::strerror(e)));
  }
  if (folder ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return Failed(c, AccessStatus::kNotRegular, target.string());
  }
  if (!Allowed(st, who, S_IRUSR, S_IRGRP, S_IROTH)) {
    return Blocked(c, AccessStatus::kNoRead, target.string(), st, who);
  }
  if (folder && !Allowed(st, who, S_IXUSR, S_IXGRP, S_IXOTH)) {
    return Blocked(c, AccessStatus::kNoSearch, target.string(), st, who);
  }
  c.status = AccessStatus::kReadable;
  return c;
}

std::string Facts(const AccessCheck& c) {
  return fmt::format("owner {}, group {}, mode {:04o}", c.owner, c.group, c.mode);
}

// Who the blocker lets through, in words.
std::string WhoMay(const AccessCheck& c, std::string_view verb) {
  if (c.group_may && !c.user_in_group) {
    return fmt::format(
        "{} only its owner and the members of the group {}, and you are not in that group in "
        "this session",
        verb, c.group);
  }
  if (c.group_may) return fmt::format("{} only its owner and the group {}", verb, c.group);
  return fmt::format("{} only its owner", verb);
}

AccessCheck CheckPath(const std::string& path, const Identity& who, bool folder) {
  AccessCheck c;
  c.path = path;
  c.folder = folder;
  std::error_code ec;
  const fs::path abs = fs::absolute(path, ec).lexically_normal();
  if (ec) return Failed(c, AccessStatus::kError, ec.message());
  fs::path target = abs;
  if (char* real = ::realpath(abs.c_str(), nullptr); real != nullptr) {
    target = real;
    std::free(real);  // realpath allocated it
  } else if (errno == ENOENT) {
    struct stat lst {};
    if (::lstat(abs.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
      std::error_code lec;
      const auto to = fs::read_symlink(abs, lec);
      return Failed(c, AccessStatus::kDangling, lec ? "?" : to.string());
    }
  }
  // Otherwise (no permission to resolve, or missing) the path as written is
  // walked: the first folder that stops the user is the answer.
  return Walk(c, target, who, folder);
}

}  // namespace

AccessCheck CheckAccess(const std::string& path, const Identity& who) {
  return CheckPath(path, who, false);
}

AccessCheck CheckFolderAccess(const std::string& folder, const Identity& who) {
  return CheckPath(folder, who, true);
}

std::string DescribeAccess(const AccessCheck& c) {
  switch (c.status) {
    case AccessStatus::kReadable:
      return "";
    case AccessStatus::kMissing:
      return fmt::format("{} does not exist ({})", c.path, c.detail);
    case AccessStatus::kDangling:
      return fmt::format("{} is a symbolic link to {}, which is missing", c.path, c.detail);
    case AccessStatus::kNotRegular:
      return fmt::format("{} is not a regular file", c.path);
    case AccessStatus::kNoSearch:
      return fmt::format("the folder {} ({}) {}", c.blocker, Facts(c), WhoMay(c, "lets in"));
    case AccessStatus::kNoRead:
      return fmt::format("the {} {} ({}) {}", c.blocker_is_folder ? "folder" : "file", c.blocker,
                         Facts(c), WhoMay(c, "may be read by"));
    case AccessStatus::kError:
      return fmt::format("{}: {}", c.path, c.detail);
  }
  return "";
}

std::string AccessFix(const AccessCheck& c, StoreKind kind) {
  if (c.status != AccessStatus::kNoSearch && c.status != AccessStatus::kNoRead) return "";
  const std::string open =
      fmt::format("sudo chmod g+{} {}", c.blocker_is_folder ? "rx" : "r", c.blocker);
  const std::string join = c.user_in_group
                               ? ""
                               : fmt::format(
                                     ", join the group: sudo usermod -aG {} $USER, then log in "
                                     "again (or run `newgrp {}`)",
                                     c.group, c.group);
  // A file can be copied; a store that cannot be listed cannot (its models' files are named
  // inside it).
  const std::string copy =
      c.folder ? ""
               : fmt::format(
                     "; or copy the file to a folder of your own: sudo install -m 0644 "
                     "-o $USER {} ~/models/ and give moetune that path",
                     c.path);
  const std::string see = fmt::format(
      "`namei -l {}` shows the owner and mode of every folder on the way; each closed one needs "
      "the same change",
      c.path);
  // Ollama's Linux service runs as the user ollama, whose home holds the store
  // (scripts/install.sh): its files are that user's.
  const std::string whose =
      kind == StoreKind::kOllama ? "Ollama's files belong to the user its service runs as. " : "";
  return fmt::format(
      "{0}Either run moetune as {1}: sudo -u {1} moetune ...; or let the group {2} in: {3}{4}{5}. "
      "{6}",
      whose, c.owner, c.group, open, join, copy, see);
}

}  // namespace moetune
