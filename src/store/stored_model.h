#pragma once
/// One model found in a store: where it is, what the store calls it, its
/// parts, and why it cannot be used when it cannot. A split model is one
/// entry with its parts.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/access.h"
#include "store/places.h"

namespace moetune {

/// One file of a model (the only one, or one part of a split model).
struct ModelPart {
  std::string path;
  uint64_t size = 0;    // bytes, 0 when unknown
  bool present = true;  // false: the part is missing from the folder
};

/// Why a stored model cannot be used.
enum class EntryProblem {
  kNone,
  kAccess,        // a part cannot be read by this user (StoredModel::access says why)
  kMissingBlob,   // the store names a file that is gone (dangling manifest or symbolic link)
  kMissingPart,   // a split model lacks a part
  kBadManifest,   // an Ollama manifest that is unreadable, not JSON, or without a valid digest
  kNoModelLayer,  // an Ollama manifest without a GGUF model layer (e.g. a safetensors model)
  kBadHeader,     // the GGUF header cannot be read or analysed
};
/// "unreadable", "missing-blob", "missing-part", "bad-manifest", "no-model-layer", "bad-header".
const char* EntryProblemName(EntryProblem problem);

/// What the model's header says (store/catalog.h reads it).
struct ModelDetails {
  std::string architecture;  // general.architecture
  std::string model_name;    // general.name
  std::string size_label;    // general.size_label ("30B-A3B"), when present
  std::string quant;         // llama.cpp's file type name ("Q4_K_M"), else the file name's tag
  bool known_architecture = true;
  bool moe = false;
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_layer = 0;
};

struct StoredModel {
  StoreKind store = StoreKind::kFolder;
  std::string root;         // the store folder it was found in
  std::string root_source;  // why that folder was searched (StoreRoot::source)
  /// The store's name: "qwen3:30b-a3b" (Ollama), "unsloth/Qwen3-30B-A3B-GGUF"
  /// (Hugging Face, llama.cpp), "lmstudio-community/Qwen3-30B-A3B-GGUF" (LM
  /// Studio); the file's path relative to the folder for a named folder; ""
  /// when the store does not record it (an old llama.cpp cache file without its
  /// manifest).
  std::string name;
  /// Ollama: the host/namespace/model of the manifest, for matching. Else "".
  std::string ollama_path;
  std::string file;    // part 1's path inside the repository or model folder
  std::string path;    // what to open: part 1 (a snapshot's link, not the blob it points to)
  std::string digest;  // content identity when the store records one ("" otherwise)
  /// Ollama: the tag. Else the quant tag of the file name (llama.cpp's rule,
  /// store/model_files.h), upper case, "" when the name has none.
  std::string tag;
  std::vector<ModelPart> parts;  // at least one; a split model's parts in order
  uint64_t declared_size = 0;    // the size the store records (an Ollama layer), 0 when none
  EntryProblem problem = EntryProblem::kNone;
  std::string problem_message;  // why it cannot be used and what to do
  AccessCheck access;           // for kAccess and kMissingBlob: the facts
  std::optional<ModelDetails> details;

  bool usable() const { return problem == EntryProblem::kNone; }
  /// The bytes on disk of every part present, else the size the store records.
  uint64_t size() const;
};

}  // namespace moetune
