// The Hugging Face hub cache and llama.cpp's older flat download cache (store/scan.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "store/model_files.h"
#include "store/scan.h"
#include "util/read_file.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kRepoPrefix = "models--";

// huggingface_hub's repo folder name: "models--" + repo id with '/' as "--"
// (llama.cpp common/hf-cache.cpp folder_name_to_repo does the inverse).
std::string RepoId(std::string_view folder) {
  std::string id(folder.substr(kRepoPrefix.size()));
  for (size_t pos = id.find("--"); pos != std::string::npos; pos = id.find("--", pos + 1)) {
    id.replace(pos, 2, "/");
  }
  return id;
}

bool IsCommit(std::string_view s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

std::string ReadRef(const fs::path& file) {
  auto text = ReadRegularFile(file.string(), 4096);
  if (!text.ok()) return "";
  std::string line = text->substr(0, text->find('\n'));
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0) {
    line.pop_back();
  }
  return IsCommit(line) ? line : "";
}

// The snapshot folders to read: refs/main's, else the first other ref's
// (hf-cache.cpp get_cached_ref), else every snapshot there is.
std::vector<fs::path> Snapshots(const fs::path& repo) {
  const fs::path snapshots = repo / "snapshots";
  std::error_code ec;
  std::vector<std::string> refs = {"main"};
  for (const auto& r : ListFolder((repo / "refs").string(), false)) {
    if (r != "main") refs.push_back(r);
  }
  for (const auto& r : refs) {
    const std::string commit = ReadRef(repo / "refs" / r);
    if (!commit.empty() && fs::is_directory(snapshots / commit, ec)) return {snapshots / commit};
  }
  std::vector<fs::path> all;
  for (const auto& s : ListFolder(snapshots.string(), true)) all.push_back(snapshots / s);
  return all;
}

bool IStartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() &&
         std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

// "manifest=<org>=<repo>=<tag>.json" -> "<org>/<repo>" (download.cpp get_manifest_path;
// common_list_cached_models reads them back the same way).
std::string ManifestRepo(std::string_view name) {
  if (name.rfind("manifest=", 0) != 0 || name.size() < 5 ||
      name.substr(name.size() - 5) != ".json") {
    return "";
  }
  std::string_view rest = name.substr(9, name.size() - 14);
  const size_t a = rest.find('=');
  if (a == std::string_view::npos) return "";
  const size_t b = rest.find('=', a + 1);
  if (b == std::string_view::npos) return "";
  return std::string(rest.substr(0, a)) + "/" + std::string(rest.substr(a + 1, b - a - 1));
}

}  // namespace

void ScanHubRoot(const StoreEnvironment& env, RootScan* scan) {
  const fs::path root(scan->root.path);
  for (const auto& folder : ListFolder(root.string(), true)) {
    if (folder.rfind(kRepoPrefix, 0) != 0 || folder.size() == kRepoPrefix.size()) continue;
    StoredModel proto;
    proto.store = scan->root.kind == StoreKind::kLlamaCache ? StoreKind::kLlamaCache
                                                            : StoreKind::kHuggingFace;
    proto.root = scan->root.path;
    proto.root_source = scan->root.source;
    proto.name = RepoId(folder);
    for (const auto& snapshot : Snapshots(root / folder)) {
      bool truncated = false;
      const auto files =
          FindModelFiles(snapshot.string(), kMaxFolderDepth, kMaxFolderEntries, &truncated);
      if (truncated) {
        scan->notes.push_back(fmt::format("{}: too many entries, cut short", snapshot.string()));
      }
      for (auto& m : GroupModelFiles(snapshot.string(), files, proto)) {
        CheckModelAccess(env.identity, &m);
        scan->models.push_back(std::move(m));
      }
    }
  }
}

void ScanLlamaFlatCache(const StoreEnvironment& env, RootScan* scan) {
  // Files are "<org>_<repo>_<path in repo with '/' as '_'>" (arg.cpp: hf_repo +
  // "_" + hf_file, then every '/' replaced); the manifests say which org/repo.
  std::vector<std::string> repos;
  std::vector<std::string> files;
  for (const auto& name : ListFolder(scan->root.path, false)) {
    if (auto repo = ManifestRepo(name); !repo.empty()) repos.push_back(std::move(repo));
    if (HasGgufExtension(name) && IsModelFileName(name)) files.push_back(name);
  }
  // Longest first, so that "org/repo-GGUF" wins over "org/repo" for its files.
  std::sort(repos.begin(), repos.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  StoredModel proto;
  proto.store = StoreKind::kLlamaCache;
  proto.root = scan->root.path;
  proto.root_source = scan->root.source;
  for (auto& m : GroupModelFiles(scan->root.path, files, proto)) {
    for (const auto& repo : repos) {
      std::string prefix = repo + "_";
      std::replace(prefix.begin(), prefix.end(), '/', '_');
      if (IStartsWith(m.file, prefix)) {
        // The rest is the path inside the repository (with '/' as '_'), which
        // QUANT is matched against, as for the other stores.
        m.name = repo;
        m.file = m.file.substr(prefix.size());
        m.tag = FileNameTag(m.file);
        break;
      }
    }
    CheckModelAccess(env.identity, &m);
    scan->models.push_back(std::move(m));
  }
}

}  // namespace moetune
