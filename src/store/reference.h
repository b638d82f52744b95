#pragma once
/// Model references: the one place a MODEL argument becomes a local file.
///
///   ollama:NAME[:TAG]                 a model pulled with Ollama (any of its stores);
///                                     NAME as Ollama writes it: qwen3, user/model,
///                                     hf.co/org/repo; TAG defaults to latest
///   hf:ORG/REPO[:QUANT]               a repository in the Hugging Face hub cache or
///                                     llama.cpp's download cache (`-hf ORG/REPO`)
///   lmstudio:PUBLISHER/MODEL[:QUANT]  a model in LM Studio's models folder
///
/// QUANT picks a file by its name as llama.cpp's `-hf REPO:QUANT` does
/// (store/model_files.h), else by the file type in its header. Names compare
/// without regard to case, as Ollama and the Hugging Face hub compare them.
/// Only files on this machine are considered: nothing is ever downloaded.
/// A reference naming no model, or several, is an error that lists the
/// candidates; one naming a model this user cannot read says why and how to fix it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/ollama_name.h"
#include "store/places.h"
#include "store/stored_model.h"
#include "util/result.h"

namespace moetune {

struct ModelReference {
  StoreKind store =
      StoreKind::kOllama;  // kOllama, kHuggingFace (with llama.cpp's cache) or kLmStudio
  std::string text;        // as written
  OllamaName ollama;       // kOllama: the parsed name (defaults applied)
  std::string repo;        // "ORG/REPO" or "PUBLISHER/MODEL"
  std::string quant;       // QUANT, "" when not given
};

/// nullopt when `text` does not start with "ollama:", "hf:" or "lmstudio:" (any
/// case); an error (kInvalidArgument, with the expected form) when it does but
/// the rest is malformed.
std::optional<Result<ModelReference>> ParseModelReference(std::string_view text);

/// The models among `models` that `ref` names: the store and the name, then
/// the tag (Ollama) or QUANT (by file name, else by the file type in `details`
/// where it has been read). Copies of one file (the same digest in two
/// folders) count once: the first usable copy stands for them.
std::vector<const StoredModel*> SelectByReference(const ModelReference& ref,
                                                  const std::vector<const StoredModel*>& models);

/// The shortest reference that selects exactly `model` among `models` ("" when
/// none does, e.g. a file in a named folder).
std::string ReferenceFor(const StoredModel& model, const std::vector<const StoredModel*>& models);

struct ResolvedModel {
  std::string path;                  // the file to open (part 1 of a split model)
  std::optional<StoredModel> model;  // the store's entry, when a reference was resolved
};

/// Resolves a reference against the stores of `env`. Errors: kNotFound (no
/// such model: the candidates and the folders searched), kInvalidArgument
/// (several models: each with the reference or path that picks it), kIo (the
/// model cannot be read: why, and the fix), kFormat (a damaged store entry).
Result<ResolvedModel> ResolveModelReference(const ModelReference& ref, const StoreEnvironment& env);

/// A MODEL argument: a path that exists (or cannot be checked) is returned as
/// given, untouched; a reference is resolved; a missing path that looks like a
/// model name ("qwen3.5:35b-a3b", "unsloth/Qwen3.5-35B-A3B-GGUF") is kNotFound
/// with the reference forms, the references it matches on this machine, and
/// `moetune models`. Any other missing path is returned as given, so the
/// reader reports it as before.
Result<ResolvedModel> ResolveModelArgument(const std::string& arg, const StoreEnvironment& env);

}  // namespace moetune
