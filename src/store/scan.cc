#include "store/scan.h"

#include <fmt/format.h>

#include <filesystem>

#include "store/model_files.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;

std::string DanglingMessage(const StoredModel& m, const AccessCheck& c) {
  if (m.store == StoreKind::kHuggingFace || m.store == StoreKind::kLlamaCache) {
    return fmt::format(
        "{} points to {}, which is missing from the cache: the download was interrupted or the "
        "blob was deleted; download the file again (llama.cpp's -hf, or `hf download {} {}`)",
        c.path, c.detail, m.name.empty() ? "ORG/REPO" : m.name, m.file);
  }
  return fmt::format("{}: give the path of the file itself", DescribeAccess(c));
}

bool IsOllamaStore(const std::string& folder) {
  std::error_code ec;
  return fs::is_directory(fs::path(folder) / "manifests", ec) &&
         fs::is_directory(fs::path(folder) / "blobs", ec);
}

bool IsHubCache(const std::string& folder) {
  for (const auto& name : ListFolder(folder, true)) {
    if (name.rfind("models--", 0) == 0) return true;
  }
  return false;
}

void ScanNamedFolder(const StoreEnvironment& env, RootScan* scan) {
  const std::string& path = scan->root.path;
  if (IsOllamaStore(path)) {
    ScanOllamaRoot(env, scan);
  } else if (IsHubCache(path)) {
    ScanHubRoot(env, scan);
  } else {
    ScanPlainFolder(env, scan);
  }
}

}  // namespace

void CheckModelAccess(const Identity& who, StoredModel* model) {
  if (model->problem != EntryProblem::kNone) return;
  for (const auto& part : model->parts) {
    AccessCheck c = CheckAccess(part.path, who);
    if (c.ok()) continue;
    model->access = c;
    if (c.status == AccessStatus::kDangling) {
      model->problem = EntryProblem::kMissingBlob;
      model->problem_message = DanglingMessage(*model, c);
      return;
    }
    model->problem = EntryProblem::kAccess;
    const std::string fix = AccessFix(c, model->store);
    model->problem_message = fmt::format("cannot read {}: {}{}{}", part.path, DescribeAccess(c),
                                         fix.empty() ? "" : ". ", fix);
    return;
  }
}

RootScan ScanRoot(const StoreRoot& root, const StoreEnvironment& env) {
  RootScan scan;
  scan.root = root;
  AccessCheck folder = CheckFolderAccess(root.path, env.identity);
  if (folder.status == AccessStatus::kMissing || folder.status == AccessStatus::kDangling) {
    return scan;
  }
  scan.exists = true;
  if (root.kind == StoreKind::kFolder && folder.status == AccessStatus::kNotRegular) {
    ScanPlainFolder(env, &scan);  // a single file named on the command line
    return scan;
  }
  if (!folder.ok()) {
    scan.access = folder;
    return scan;
  }
  switch (root.kind) {
    case StoreKind::kOllama:
      ScanOllamaRoot(env, &scan);
      break;
    case StoreKind::kHuggingFace:
      ScanHubRoot(env, &scan);
      break;
    case StoreKind::kLlamaCache:
      // $LLAMA_CACHE holds the hub layout since March 2026 and flat files before.
      ScanHubRoot(env, &scan);
      ScanLlamaFlatCache(env, &scan);
      break;
    case StoreKind::kLmStudio:
      ScanLmStudioRoot(env, &scan);
      break;
    case StoreKind::kFolder:
      ScanNamedFolder(env, &scan);
      break;
  }
  return scan;
}

void ScanLmStudioRoot(const StoreEnvironment& env, RootScan* scan) {
  // lmstudio.ai/docs/app/basics/import-model: models/<publisher>/<model>/<file>.gguf;
  // LM Studio ignores files placed higher up, and so does this.
  const fs::path root(scan->root.path);
  for (const auto& publisher : ListFolder(root.string(), true)) {
    for (const auto& model : ListFolder((root / publisher).string(), true)) {
      const std::string dir = (root / publisher / model).string();
      bool truncated = false;
      const auto files = FindModelFiles(dir, 4, kMaxFolderEntries, &truncated);
      if (truncated) scan->notes.push_back(fmt::format("{}: too many entries, cut short", dir));
      StoredModel proto;
      proto.store = StoreKind::kLmStudio;
      proto.root = scan->root.path;
      proto.root_source = scan->root.source;
      proto.name = fmt::format("{}/{}", publisher, model);
      for (auto& m : GroupModelFiles(dir, files, proto)) {
        CheckModelAccess(env.identity, &m);
        scan->models.push_back(std::move(m));
      }
    }
  }
}

void ScanPlainFolder(const StoreEnvironment& env, RootScan* scan) {
  const fs::path given(scan->root.path);
  std::error_code ec;
  std::string base = given.string();
  std::vector<std::string> files;
  if (fs::is_directory(given, ec)) {
    bool truncated = false;
    files = FindModelFiles(base, kMaxFolderDepth, kMaxFolderEntries, &truncated);
    if (truncated) {
      scan->notes.push_back(fmt::format("{}: more than {} entries or {} folders deep, cut short",
                                        base, kMaxFolderEntries, kMaxFolderDepth));
    }
  } else {
    base = given.has_parent_path() ? given.parent_path().string() : ".";
    files = {given.filename().string()};
  }
  StoredModel proto;
  proto.store = StoreKind::kFolder;
  proto.root = scan->root.path;
  proto.root_source = scan->root.source;
  for (auto& m : GroupModelFiles(base, files, proto)) {
    m.name = m.file;
    CheckModelAccess(env.identity, &m);
    scan->models.push_back(std::move(m));
  }
}

}  // namespace moetune
