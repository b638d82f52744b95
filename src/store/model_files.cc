#include "store/model_files.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "gguf/split.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

struct Walker {
  Walker(std::size_t entries, int depth) : max_entries(entries), max_depth(depth) {}
  std::size_t max_entries;
  int max_depth;
  std::size_t seen = 0;
  bool truncated = false;
  std::set<std::pair<dev_t, ino_t>> visited;
  std::vector<std::string> found;

  void Walk(const fs::path& dir, const std::string& rel, int depth) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0 || !visited.insert({st.st_dev, st.st_ino}).second) return;
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      if (++seen > max_entries) {
        truncated = true;
        return;
      }
      const std::string name = it->path().filename().string();
      const std::string child = rel.empty() ? name : fmt::format("{}/{}", rel, name);
      std::error_code tec;
      if (it->is_directory(tec)) {
        if (depth < max_depth) {
          Walk(it->path(), child, depth + 1);
        } else {
          truncated = true;
        }
        if (truncated && seen > max_entries) return;
        continue;
      }
      if (HasGgufExtension(name) && IsModelFileName(name)) found.push_back(child);
    }
  }
};

// Each split set's parts, keyed by (prefix, count); single files keyed by
// their own path with count 0.
using SplitKey = std::pair<std::string, uint32_t>;

std::string LinkBlob(const std::string& path) {
  std::error_code ec;
  if (!fs::is_symlink(path, ec)) return "";
  return fs::read_symlink(path, ec).filename().string();
}

StoredModel Entry(const std::string& base, const std::string& rel_part1,
                  std::vector<ModelPart> parts, const StoredModel& proto) {
  StoredModel m = proto;
  m.file = rel_part1;
  m.path = (fs::path(base) / rel_part1).string();
  m.tag = FileNameTag(rel_part1);
  m.digest = LinkBlob(m.path);
  m.parts = std::move(parts);
  for (size_t i = 0; i < m.parts.size(); ++i) {
    if (m.parts[i].present) continue;
    m.problem = EntryProblem::kMissingPart;
    m.problem_message = fmt::format(
        "split part {} of {} is missing: expected {}; download all {} parts into "
        "the same folder",
        i + 1, m.parts.size(), m.parts[i].path, m.parts.size());
    break;
  }
  return m;
}

}  // namespace

bool HasGgufExtension(std::string_view file_name) {
  return file_name.size() > 5 && Upper(file_name.substr(file_name.size() - 5)) == ".GGUF";
}

bool IsModelFileName(std::string_view file_name) {
  const std::string up = Upper(BaseName(file_name));
  return up.find("MMPROJ") == std::string::npos && up.find("IMATRIX") == std::string::npos;
}

std::string FileNameTag(std::string_view file_name) {
  std::string name = BaseName(file_name);
  if (!HasGgufExtension(name)) return "";
  name.resize(name.size() - 5);
  // "-00001-of-00003" is 15 characters.
  if (name.size() > 15 && name[name.size() - 15] == '-' &&
      name.compare(name.size() - 9, 4, "-of-") == 0) {
    const std::string digits = name.substr(name.size() - 14, 5) + name.substr(name.size() - 5);
    if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      name.resize(name.size() - 15);
    }
  }
  size_t start = name.size();
  while (start > 0 && IsWordChar(name[start - 1])) --start;
  if (start == name.size() || start == 0 || (name[start - 1] != '-' && name[start - 1] != '.')) {
    return "";
  }
  return Upper(name.substr(start));
}

bool FileMatchesQuant(std::string_view relative_path, std::string_view quant) {
  if (quant.empty()) return true;
  const std::string q = Upper(quant);
  if (FileNameTag(relative_path) == q) return true;
  const std::string path = Upper(relative_path);
  for (size_t pos = path.find(q); pos != std::string::npos; pos = path.find(q, pos + 1)) {
    const size_t after = pos + q.size();
    const bool end_ok = after < path.size() && (path[after] == '.' || path[after] == '-');
    const bool start_ok =
        pos == 0 || std::string_view("/-._").find(path[pos - 1]) != std::string_view::npos;
    if (end_ok && start_ok) return true;
  }
  return false;
}

std::vector<std::string> FindModelFiles(const std::string& folder, int max_depth,
                                        std::size_t max_entries, bool* truncated) {
  Walker w(max_entries, max_depth);
  w.Walk(folder, "", 0);
  std::sort(w.found.begin(), w.found.end());
  if (truncated != nullptr) *truncated = w.truncated;
  return w.found;
}

std::vector<std::string> ListFolder(const std::string& folder, bool folders_only,
                                    std::size_t max_entries) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::directory_iterator() && names.size() < max_entries; it.increment(ec)) {
    std::error_code tec;
    if (it->is_directory(tec) == folders_only) names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

ModelPart StatPart(const std::string& path) {
  ModelPart p;
  p.path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    p.size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
    return p;
  }
  // A dangling link is present in the folder, and so is a file behind a folder
  // this process may not enter; only a name that is not there is absent.
  const int e = errno;
  struct stat lst {};
  p.present = e != ENOENT || ::lstat(path.c_str(), &lst) == 0;
  return p;
}

std::vector<StoredModel> GroupModelFiles(const std::string& base,
                                         const std::vector<std::string>& relative,
                                         const StoredModel& proto) {
  std::map<SplitKey, std::vector<std::string>> groups;  // ordered: stable output
  for (const auto& rel : relative) {
    auto split = ParseGgufSplitPath(rel);
    if (split) {
      groups[{split->prefix, split->count}].push_back(rel);
    } else {
      groups[{rel, 0}].push_back(rel);
    }
  }
  std::vector<StoredModel> out;
  for (const auto& [key, files] : groups) {
    const auto& [prefix, count] = key;
    if (count == 0) {
      out.push_back(Entry(base, prefix, {StatPart((fs::path(base) / prefix).string())}, proto));
      continue;
    }
    std::vector<ModelPart> parts;
    for (uint32_t i = 0; i < count; ++i) {
      parts.push_back(StatPart((fs::path(base) / GgufSplitPath(prefix, i, count)).string()));
    }
    out.push_back(Entry(base, GgufSplitPath(prefix, 0, count), std::move(parts), proto));
  }
  return out;
}

}  // namespace moetune
