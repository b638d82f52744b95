#pragma once
/// Where people keep GGUF models on this machine, and the one seam through
/// which the store code sees the process (home, environment, system folders,
/// the user's identity), so that tests point every lookup at a temporary
/// folder (architecture.md: side effects behind small seams).
///
/// The folders, each as the tool itself defines it:
///  - Ollama: $OLLAMA_MODELS, else ~/.ollama/models (ollama envconfig/config.go
///    Models()); the Linux service installed by Ollama's scripts/install.sh
///    runs as the user `ollama` whose home is /usr/share/ollama, so its models
///    are in /usr/share/ollama/.ollama/models.
///  - Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else
///    $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub
///    (huggingface_hub docs, "Environment variables"); HUGGINGFACE_HUB_CACHE is
///    the older name of HF_HUB_CACHE that llama.cpp still reads
///    (common/hf-cache.cpp get_cache_directory). Every one that is set is
///    searched: a model downloaded before HF_HOME was set is still in the default.
///  - llama.cpp's download cache: $LLAMA_CACHE, else $XDG_CACHE_HOME/llama.cpp,
///    else ~/.cache/llama.cpp (common/common.cpp fs_get_cache_directory, Linux).
///    Since March 2026 (llama.cpp PRs #20775 and #21009) `-hf` downloads go to
///    the Hugging Face hub layout, under $LLAMA_CACHE when it is set and in the
///    hub cache above otherwise; older builds wrote flat files there (store/scan.h).
///  - LM Studio: the folder named by ~/.lmstudio-home-pointer, ~/.lmstudio and
///    the older ~/.cache/lm-studio, each with a models/ folder holding
///    <publisher>/<model>/<file>.gguf (lmstudio.ai/docs/app/basics/import-model).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace moetune {

/// The kinds of places a model can be found in.
enum class StoreKind {
  kOllama,
  kHuggingFace,  // the Hugging Face hub cache
  kLlamaCache,   // llama.cpp's own download cache
  kLmStudio,
  kFolder,  // a folder the user named
};
/// "ollama", "hf", "llama.cpp", "lmstudio", "folder": the names used in text and JSON.
const char* StoreKindName(StoreKind kind);

/// The user whose access counts: the effective user id and every group id
/// (the effective one and the supplementary ones), as the kernel checks them.
struct Identity {
  uint32_t uid = 0;
  std::vector<uint32_t> gids;
  bool InGroup(uint32_t gid) const;
  /// This process's identity.
  static Identity Current();
};

/// Everything the store code reads from outside itself.
struct StoreEnvironment {
  std::string home;                        // the user's home folder ($HOME or the passwd entry)
  std::map<std::string, std::string> env;  // environment variables (only those named above matter)
  /// Prefix of system-wide folders such as Ollama's service folder: "" is the live system.
  std::string system_root;
  Identity identity;

  /// A variable's value, "" when unset.
  std::string Get(std::string_view name) const;
  /// This process: $HOME (else the passwd entry), the variables the stores
  /// read, the live system, this user's identity.
  static StoreEnvironment Current();
};

/// One folder that may hold models.
struct StoreRoot {
  StoreKind kind = StoreKind::kFolder;
  std::string path;
  std::string
      source;  // why it is searched: "OLLAMA_MODELS", "default", "Ollama's Linux service", ...
};

/// Every store folder, in the order references search them (Ollama, Hugging
/// Face, llama.cpp, LM Studio; within a kind, what the environment names
/// first), without duplicates. Folders that do not exist are included: the
/// listing says it looked there.
std::vector<StoreRoot> StoreRoots(const StoreEnvironment& env);

/// The roots of one kind (StoreRoots filtered).
std::vector<StoreRoot> StoreRootsOf(const StoreEnvironment& env, StoreKind kind);

}  // namespace moetune
