#include "store/places.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>

#include "util/read_file.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;

// The variables StoreRoots reads; Current() copies only these.
constexpr std::array<const char*, 7> kVariables = {
    "OLLAMA_MODELS",  "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "LLAMA_CACHE",
    "XDG_CACHE_HOME", "HOME"};

std::string Join(const std::string& a, std::string_view b) {
  return (fs::path(a) / fs::path(b)).lexically_normal().string();
}

void Add(std::vector<StoreRoot>* roots, StoreKind kind, const std::string& path,
         std::string source) {
  if (path.empty()) return;
  std::string normal = fs::path(path).lexically_normal().string();
  // "/x/hub/" and "/x/hub" are one folder.
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  for (const auto& r : *roots) {
    if (r.kind == kind && r.path == normal) return;
  }
  roots->push_back({kind, normal, std::move(source)});
}

void AddOllama(const StoreEnvironment& env, std::vector<StoreRoot>* roots) {
  // ollama envconfig/config.go Models(): OLLAMA_MODELS, else ~/.ollama/models.
  Add(roots, StoreKind::kOllama, env.Get("OLLAMA_MODELS"), "OLLAMA_MODELS");
  if (!env.home.empty()) {
    Add(roots, StoreKind::kOllama, Join(env.home, ".ollama/models"), "default (~/.ollama/models)");
  }
  // scripts/install.sh: `useradd -r -s /bin/false -U -m -d /usr/share/ollama ollama`,
  // and the service runs as that user, so Models() is under its home.
  Add(roots, StoreKind::kOllama, env.system_root + "/usr/share/ollama/.ollama/models",
      "Ollama's Linux service (user ollama)");
}

void AddHub(const StoreEnvironment& env, std::vector<StoreRoot>* roots) {
  Add(roots, StoreKind::kHuggingFace, env.Get("HF_HUB_CACHE"), "HF_HUB_CACHE");
  Add(roots, StoreKind::kHuggingFace, env.Get("HUGGINGFACE_HUB_CACHE"), "HUGGINGFACE_HUB_CACHE");
  if (const auto hf_home = env.Get("HF_HOME"); !hf_home.empty()) {
    Add(roots, StoreKind::kHuggingFace, Join(hf_home, "hub"), "HF_HOME/hub");
  }
  if (const auto xdg = env.Get("XDG_CACHE_HOME"); !xdg.empty()) {
    Add(roots, StoreKind::kHuggingFace, Join(xdg, "huggingface/hub"),
        "XDG_CACHE_HOME/huggingface/hub");
  }
  if (!env.home.empty()) {
    Add(roots, StoreKind::kHuggingFace, Join(env.home, ".cache/huggingface/hub"),
        "default (~/.cache/huggingface/hub)");
  }
}

void AddLlamaCache(const StoreEnvironment& env, std::vector<StoreRoot>* roots) {
  // common/common.cpp fs_get_cache_directory() on Linux.
  Add(roots, StoreKind::kLlamaCache, env.Get("LLAMA_CACHE"), "LLAMA_CACHE");
  if (const auto xdg = env.Get("XDG_CACHE_HOME"); !xdg.empty()) {
    Add(roots, StoreKind::kLlamaCache, Join(xdg, "llama.cpp"), "XDG_CACHE_HOME/llama.cpp");
  }
  if (!env.home.empty()) {
    Add(roots, StoreKind::kLlamaCache, Join(env.home, ".cache/llama.cpp"),
        "default (~/.cache/llama.cpp)");
  }
}

// The first line of ~/.lmstudio-home-pointer, when it names a folder.
std::string LmStudioPointer(const StoreEnvironment& env) {
  if (env.home.empty()) return "";
  auto text = ReadRegularFile(Join(env.home, ".lmstudio-home-pointer"), std::size_t{64} * 1024);
  if (!text.ok()) return "";
  std::string line = text->substr(0, text->find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  std::error_code ec;
  return !line.empty() && fs::is_directory(line, ec) ? line : "";
}

void AddLmStudio(const StoreEnvironment& env, std::vector<StoreRoot>* roots) {
  if (const auto home = LmStudioPointer(env); !home.empty()) {
    Add(roots, StoreKind::kLmStudio, Join(home, "models"), "~/.lmstudio-home-pointer");
  }
  if (env.home.empty()) return;
  Add(roots, StoreKind::kLmStudio, Join(env.home, ".lmstudio/models"),
      "default (~/.lmstudio/models)");
  Add(roots, StoreKind::kLmStudio, Join(env.home, ".cache/lm-studio/models"),
      "older default (~/.cache/lm-studio/models)");
}

}  // namespace

const char* StoreKindName(StoreKind kind) {
  switch (kind) {
    case StoreKind::kOllama:
      return "ollama";
    case StoreKind::kHuggingFace:
      return "hf";
    case StoreKind::kLlamaCache:
      return "llama.cpp";
    case StoreKind::kLmStudio:
      return "lmstudio";
    case StoreKind::kFolder:
      return "folder";
  }
  return "folder";
}

bool Identity::InGroup(uint32_t gid) const {
  return std::find(gids.begin(), gids.end(), gid) != gids.end();
}

Identity Identity::Current() {
  Identity id;
  id.uid = ::geteuid();
  id.gids.push_back(::getegid());
  const int n = ::getgroups(0, nullptr);
  if (n > 0) {
    std::vector<gid_t> groups(static_cast<size_t>(n));
    const int got = ::getgroups(n, groups.data());
    for (int i = 0; i < got; ++i) id.gids.push_back(groups[static_cast<size_t>(i)]);
  }
  return id;
}

std::string StoreEnvironment::Get(std::string_view name) const {
  auto it = env.find(std::string(name));
  return it == env.end() ? "" : it->second;
}

StoreEnvironment StoreEnvironment::Current() {
  StoreEnvironment e;
  for (const char* name : kVariables) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') e.env[name] = v;
  }
  e.home = e.Get("HOME");
  if (e.home.empty()) {
    // Like llama.cpp and Python's expanduser: the passwd entry when HOME is unset.
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
      e.home = pw->pw_dir;
    }
  }
  e.identity = Identity::Current();
  return e;
}

std::vector<StoreRoot> StoreRoots(const StoreEnvironment& env) {
  std::vector<StoreRoot> roots;
  AddOllama(env, &roots);
  AddHub(env, &roots);
  AddLlamaCache(env, &roots);
  AddLmStudio(env, &roots);
  return roots;
}

std::vector<StoreRoot> StoreRootsOf(const StoreEnvironment& env, StoreKind kind) {
  std::vector<StoreRoot> out;
  for (auto& r : StoreRoots(env)) {
    if (r.kind == kind) out.push_back(std::move(r));
  }
  return out;
}

}  // namespace moetune
