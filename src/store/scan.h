#pragma once
/// Reading one store folder into StoredModel entries, without opening a model
/// file (store/catalog.h reads the headers). Layouts, as each tool writes them:
///
/// Ollama (ollama manifest/paths.go, types/model/name.go):
///   <root>/manifests/<host>/<namespace>/<model>/<tag>   JSON, OCI-style manifest
///   <root>/blobs/sha256-<64 hex>                         content-addressed files
///   The manifest's layer whose mediaType is "application/vnd.ollama.image.model"
///   is the GGUF file; its digest "sha256:<hex>" names the blob. Names default
///   to host registry.ollama.ai, namespace library, tag latest.
///
/// Hugging Face hub cache (huggingface_hub "Manage the cache"):
///   <root>/models--<org>--<name>/refs/main          the commit of branch main
///   <root>/models--<org>--<name>/snapshots/<commit>/<path in repo>
///                                                   symbolic links into ../../blobs/
///   <root>/models--<org>--<name>/blobs/<sha256 or git hash>
///   The snapshot of refs/main is read, else of another ref, else every snapshot
///   (llama.cpp's hf-cache.cpp get_cached_ref does the same).
///
/// llama.cpp's cache before March 2026 (common/arg.cpp, common/download.cpp):
///   <root>/<org>_<repo>_<path in repo, '/' as '_'>   the downloaded file
///   <root>/manifest=<org>=<repo>=<tag>.json          the answer that named it
///   (plus .etag / .json / .downloadInProgress files beside the models). Since
///   then $LLAMA_CACHE holds the hub layout above; both are read there.
///
/// LM Studio (lmstudio.ai/docs/app/basics/import-model):
///   <root>/<publisher>/<model>/<file>.gguf  (subfolders of a repository kept)

#include <string>
#include <vector>

#include "store/access.h"
#include "store/places.h"
#include "store/stored_model.h"

namespace moetune {

/// Limits on what one folder may cost to read: a store of a few hundred
/// models is far below them; a hostile or enormous tree is cut short (noted).
inline constexpr int kMaxFolderDepth = 8;
inline constexpr std::size_t kMaxFolderEntries = 100000;

/// What one store folder holds.
struct RootScan {
  StoreRoot root;
  bool exists = false;
  /// Why the folder cannot be searched by this user (exists but not ok()).
  AccessCheck access;
  std::vector<StoredModel> models;
  std::vector<std::string> notes;  // e.g. a walk cut short, unreadable manifests skipped
};

/// Reads `root` with the layout of its kind; a kFolder root that holds an
/// Ollama store (manifests/ and blobs/) or a hub cache (models--*) is read as
/// one, any other folder (or a single file) as plain .gguf files.
RootScan ScanRoot(const StoreRoot& root, const StoreEnvironment& env);

// The scanners ScanRoot dispatches to (one file each), for tests.
void ScanOllamaRoot(const StoreEnvironment& env, RootScan* scan);
void ScanHubRoot(const StoreEnvironment& env, RootScan* scan);
void ScanLlamaFlatCache(const StoreEnvironment& env, RootScan* scan);
void ScanLmStudioRoot(const StoreEnvironment& env, RootScan* scan);
void ScanPlainFolder(const StoreEnvironment& env, RootScan* scan);

/// Sets kAccess (or kMissingBlob for a dangling link) on a model whose part
/// `who` cannot read, with the reason and the fix in problem_message.
void CheckModelAccess(const Identity& who, StoredModel* model);

}  // namespace moetune
