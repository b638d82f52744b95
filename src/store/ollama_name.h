#pragma once
/// Ollama's model names, as ollama's types/model/name.go reads and writes
/// them: [host/][namespace/]model[:tag], with host registry.ollama.ai,
/// namespace library and tag latest when left out, compared without regard to
/// case (Name.EqualFold), and shown shortest (DisplayShortest: "qwen3:30b" for
/// the library, "user/model:tag" for another namespace, the full name for
/// another host such as hf.co).

#include <optional>
#include <string>
#include <string_view>

namespace moetune {

struct OllamaName {
  std::string host;
  std::string ns;  // namespace
  std::string model;
  std::string tag;

  /// The shortest form Ollama shows ("qwen3:30b-a3b", "hf.co/org/repo:Q4_K_M").
  std::string Display() const;
  /// Same model and tag, any case.
  bool EqualFold(const OllamaName& other) const;
  /// Same host, namespace and model (any tag), any case.
  bool SameModel(const OllamaName& other) const;
};

/// Parses a name (ParseNameBare then the defaults). nullopt when a part is
/// empty or not what Ollama accepts: letters, digits, '_' first, then also
/// '-' and '.' (and ':' in a host), at most 80 characters (350 for a host).
/// `tag_given` says whether the text named a tag.
std::optional<OllamaName> ParseOllamaName(std::string_view text, bool* tag_given = nullptr);

}  // namespace moetune
