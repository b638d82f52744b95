#include "store/catalog.h"

#include "gguf/split.h"
#include "model/arch.h"
#include "model/file_type.h"

namespace moetune {

std::vector<const StoredModel*> ModelListing::Models() const {
  std::vector<const StoredModel*> out;
  for (const auto& place : places) {
    for (const auto& m : place.models) out.push_back(&m);
  }
  return out;
}

ModelListing ListModels(const StoreEnvironment& env, const ListOptions& options) {
  ModelListing listing;
  for (const auto& root : StoreRoots(env)) listing.places.push_back(ScanRoot(root, env));
  for (const auto& folder : options.folders) {
    listing.places.push_back(
        ScanRoot({StoreKind::kFolder, folder, "named on the command line"}, env));
  }
  if (options.read_headers) {
    for (auto& place : listing.places) {
      for (auto& m : place.models) DescribeModel(&m);
    }
  }
  return listing;
}

void DescribeModel(StoredModel* model) {
  if (!model->usable() || model->details) return;
  auto gguf = OpenGgufModel(model->path);
  if (!gguf.ok()) {
    model->problem = EntryProblem::kBadHeader;
    model->problem_message = gguf.error().message();
    return;
  }
  auto arch = AnalyzeArchitecture(*gguf);
  if (!arch.ok()) {
    model->problem = EntryProblem::kBadHeader;
    model->problem_message = arch.error().Context(model->path).message();
    return;
  }
  ModelDetails d;
  d.architecture = arch->hp.arch;
  d.model_name = arch->hp.name;
  d.known_architecture = arch->known_arch;
  d.moe = arch->is_moe();
  d.n_expert = arch->hp.n_expert;
  d.n_expert_used = arch->hp.n_expert_used;
  d.n_layer = arch->hp.n_layer;
  // Part 1 carries the model's metadata (gguf/split.h).
  const Metadata& md = gguf->parts.front().metadata;
  d.size_label = md.GetString("general.size_label").value_or("");
  const auto file_type = md.GetUint("general.file_type");
  const auto name = file_type ? LlamaFileTypeName(*file_type) : std::nullopt;
  // Without general.file_type the file name's tag is the best guess (an
  // Ollama tag names a variant, not a quant).
  d.quant = name ? std::string(*name) : (model->store == StoreKind::kOllama ? "" : model->tag);
  model->details = std::move(d);
}

}  // namespace moetune
