// Ollama's store: manifests naming content-addressed blobs (store/scan.h).
#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "store/model_files.h"
#include "store/ollama_name.h"
#include "store/scan.h"
#include "util/read_file.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;

// server/create.go and the registry: the layer holding the GGUF file.
constexpr std::string_view kModelMediaType = "application/vnd.ollama.image.model";
// Real manifests are a few hundred bytes; a larger one is not a manifest.
constexpr std::size_t kMaxManifestBytes = 1 << 20;

// manifest/paths.go BlobsPath: "^sha256[:-][0-9a-fA-F]{64}$"; the file is
// named with '-' (':' is not allowed in Windows file names).
std::string BlobHex(const std::string& digest) {
  if (digest.size() != 71 || digest.compare(0, 6, "sha256") != 0 ||
      (digest[6] != ':' && digest[6] != '-')) {
    return "";
  }
  std::string hex = digest.substr(7);
  for (char& c : hex) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0) return "";
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return hex;
}

void Fail(StoredModel* m, EntryProblem problem, std::string message) {
  m->problem = problem;
  m->problem_message = std::move(message);
}

// The model layer of a parsed manifest, or a problem on `m`.
const nlohmann::json* ModelLayer(const nlohmann::json& j, const std::string& manifest,
                                 StoredModel* m) {
  const auto layers = j.is_object() ? j.find("layers") : j.end();
  if (!j.is_object() || layers == j.end() || !layers->is_array()) {
    Fail(m, EntryProblem::kBadManifest,
         fmt::format("the manifest {} has no layers; it is damaged: pull the model again "
                     "(ollama pull {})",
                     manifest, m->name));
    return nullptr;
  }
  std::string types;
  for (const auto& layer : *layers) {
    const auto type = layer.is_object() ? layer.value("mediaType", "") : "";
    if (type == kModelMediaType) return &layer;
    types += (types.empty() ? "" : ", ") + type;
  }
  Fail(m, EntryProblem::kNoModelLayer,
       fmt::format("{} has no GGUF model layer ({}; its layers: {}): moetune reads GGUF "
                   "models only",
                   m->name, kModelMediaType, types.empty() ? "none" : types));
  return nullptr;
}

StoredModel ReadManifest(const RootScan& scan, const OllamaName& name, const std::string& file,
                         const Identity& who) {
  StoredModel m;
  m.store = StoreKind::kOllama;
  m.root = scan.root.path;
  m.root_source = scan.root.source;
  m.name = name.Display();
  m.ollama_path = name.host + "/" + name.ns + "/" + name.model;
  m.tag = name.tag;
  m.file = file;
  m.path = file;
  auto text = ReadRegularFile(file, kMaxManifestBytes);
  if (!text.ok()) {
    m.access = CheckAccess(file, who);
    const std::string why = m.access.ok() ? text.error().message() : DescribeAccess(m.access);
    const std::string fix = AccessFix(m.access, StoreKind::kOllama);
    Fail(&m, EntryProblem::kBadManifest,
         fmt::format("cannot read the manifest {}: {}{}{}", file, why, fix.empty() ? "" : ". ",
                     fix));
    return m;
  }
  const auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  const nlohmann::json* layer = ModelLayer(j, file, &m);
  if (layer == nullptr) return m;
  const auto digest = layer->value("digest", "");
  const std::string hex = BlobHex(digest);
  if (hex.empty()) {
    Fail(&m, EntryProblem::kBadManifest,
         fmt::format("the manifest {} names the blob '{}', which is no sha256 digest; pull the "
                     "model again (ollama pull {})",
                     file, digest, m.name));
    return m;
  }
  m.digest = "sha256:" + hex;
  m.file = "blobs/sha256-" + hex;
  m.path = (fs::path(scan.root.path) / m.file).string();
  const auto size = layer->find("size");
  if (size != layer->end() && size->is_number_unsigned()) m.declared_size = size->get<uint64_t>();
  m.parts = {StatPart(m.path)};
  if (!m.parts[0].present) {
    Fail(&m, EntryProblem::kMissingBlob,
         fmt::format("the manifest {} names the blob {}, which is missing: the pull was "
                     "interrupted or the blob was removed; run `ollama pull {}` again",
                     file, m.path, m.name));
    return m;
  }
  CheckModelAccess(who, &m);
  return m;
}

}  // namespace

void ScanOllamaRoot(const StoreEnvironment& env, RootScan* scan) {
  // manifest/manifest.go Manifests(): manifests/*/*/*/* are host/namespace/model/tag.
  const fs::path manifests = fs::path(scan->root.path) / "manifests";
  for (const auto& host : ListFolder(manifests.string(), true)) {
    for (const auto& ns : ListFolder((manifests / host).string(), true)) {
      for (const auto& model : ListFolder((manifests / host / ns).string(), true)) {
        const fs::path dir = manifests / host / ns / model;
        for (const auto& tag : ListFolder(dir.string(), false)) {
          const OllamaName name{host, ns, model, tag};
          scan->models.push_back(ReadManifest(*scan, name, (dir / tag).string(), env.identity));
        }
      }
    }
  }
}

}  // namespace moetune
