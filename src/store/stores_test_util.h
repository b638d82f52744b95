#pragma once
/// Test-only helpers (header-only, included by store/*_test.cc): small real
/// GGUF models written once per process, and the pieces of each store's
/// layout built in a temporary folder that the StoreEnvironment points at
/// (never the real home).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "gguf/split.h"
#include "model/synth.h"
#include "model/synth_sparse.h"
#include "store/places.h"
#include "util/temp_dir_test_util.h"

namespace moetune::testing {

/// mkdtemp makes a folder only its owner may enter: open it to everyone, as
/// a home or /usr/share is, so that only the modes a test sets block.
inline void OpenToOthers(const std::string& dir) { ::chmod(dir.c_str(), 0755); }

/// A user who is neither root nor the owner of the test's files (root).
inline Identity Stranger() { return Identity{12345, {12345}}; }

/// An environment whose home and system root are inside `dir`, with no
/// variables set, seen by `who` (root by default: the tests run as root or
/// as the files' owner).
inline StoreEnvironment TempStoreEnv(const std::string& dir, Identity who = Identity{0, {0}}) {
  OpenToOthers(dir);
  StoreEnvironment env;
  env.home = dir + "/home";
  env.system_root = dir + "/sys";
  env.identity = std::move(who);
  std::filesystem::create_directories(env.home);
  return env;
}

inline void MakeParent(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
}

inline void WriteText(const std::string& path, const std::string& text) {
  MakeParent(path);
  std::ofstream(path) << text;
}

inline void CopyFile(const std::string& from, const std::string& to) {
  MakeParent(to);
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
  ::chmod(to.c_str(), 0644);  // readable by anyone unless a test closes it
}

inline void Link(const std::string& target, const std::string& link) {
  MakeParent(link);
  std::filesystem::create_symlink(target, link);
}

/// The models the store tests copy into layouts, written once per process:
/// a tiny MoE (qwen3moe, file type Q4_K_M) and a tiny dense model (llama,
/// Q8_0) as sparse files (headers real, weights holes), and the MoE split into
/// three parts (llama-gguf-split's layout, every part a real file).
struct StoreTestModels {
  std::string moe;
  std::string dense;
  std::vector<std::string> split;  // NAME-00001-of-00003.gguf ...

  static const StoreTestModels& Get() {
    static const StoreTestModels models = Make();
    return models;
  }

 private:
  static SynthOptions Tiny(const std::string& preset, SynthQuant quant) {
    SynthOptions o;
    o.spec = ScaleSynthSpec(*SynthPreset(preset), *ParseSynthScale("tiny"));
    o.quant = quant;
    return o;
  }
  static StoreTestModels Make() {
    static TempDir dir;  // lives until the process ends
    StoreTestModels m;
    m.moe = dir.File("moe.gguf");
    m.dense = dir.File("dense.gguf");
    EXPECT_TRUE(WriteSparseSynthModel(Tiny("qwen3moe", SynthQuant::kQ4_K_M), m.moe).ok());
    EXPECT_TRUE(WriteSparseSynthModel(Tiny("llama", SynthQuant::kQ8_0), m.dense).ok());
    auto writer = BuildSynthWriter(Tiny("qwen3moe", SynthQuant::kQ4_K_M));
    EXPECT_TRUE(writer.ok());
    if (writer.ok()) {
      auto parts = WriteGgufSplit(*writer, dir.File("split"), 3);
      EXPECT_TRUE(parts.ok());
      if (parts.ok()) m.split = *parts;
    }
    return m;
  }
};

/// An Ollama manifest whose model layer is the blob sha256:<hex>.
inline std::string OllamaManifest(const std::string& hex, uint64_t size,
                                  const std::string& media = "application/vnd.ollama.image.model") {
  return "{\"schemaVersion\":2,\"mediaType\":\"application/"
         "vnd.docker.distribution.manifest.v2+json\",\"config\":{\"mediaType\":\"application/"
         "vnd.docker.container.image.v1+json\",\"digest\":\"sha256:" +
         std::string(64, 'c') + "\",\"size\":485},\"layers\":[{\"mediaType\":\"" + media +
         "\",\"digest\":\"sha256:" + hex + "\",\"size\":" + std::to_string(size) +
         "},{\"mediaType\":\"application/vnd.ollama.image.template\",\"digest\":\"sha256:" +
         std::string(64, 'd') + "\",\"size\":1231}]}";
}

/// A 64-digit hex digest made of one character.
inline std::string Hex(char c) { return std::string(64, c); }

/// Puts `model` into the Ollama store `root` as NAME (host/namespace/model/tag
/// path under manifests/) with blob digest sha256:<hex>; returns the blob path.
inline std::string AddOllamaModel(const std::string& root, const std::string& manifest_path,
                                  const std::string& hex, const std::string& model) {
  std::string blob = fmt::format("{}/blobs/sha256-{}", root, hex);
  if (!model.empty()) CopyFile(model, blob);
  WriteText(root + "/manifests/" + manifest_path,
            OllamaManifest(hex, model.empty() ? 1000 : std::filesystem::file_size(model)));
  return blob;
}

/// Puts files into a hub cache `root` for repository `repo` ("org/name") at
/// commit `commit` (refs/main points at it): each (path in repo, model file)
/// becomes blobs/<name> with a snapshot link to it, as huggingface_hub lays it out.
inline void AddHubFiles(const std::string& root, const std::string& repo, const std::string& commit,
                        const std::vector<std::pair<std::string, std::string>>& files,
                        bool set_main = true) {
  std::string folder = "models--" + repo;
  for (size_t p = folder.find('/'); p != std::string::npos; p = folder.find('/')) {
    folder.replace(p, 1, "--");
  }
  const std::string repo_dir = root + "/" + folder;
  if (set_main) WriteText(repo_dir + "/refs/main", commit);
  for (const auto& [path, model] : files) {
    // Named by what it holds, as the hub names blobs by their hash: the same
    // file put into two caches has the same blob name.
    const std::string blob_name = fmt::format(
        "{:016x}{:048x}", std::hash<std::string>{}(fmt::format("{}|{}", path, model)), 0);
    if (!model.empty()) CopyFile(model, fmt::format("{}/blobs/{}", repo_dir, blob_name));
    const std::string link = fmt::format("{}/snapshots/{}/{}", repo_dir, commit, path);
    const auto depth = std::count(path.begin(), path.end(), '/');
    std::string up = "../..";
    for (long i = 0; i < depth; ++i) up += "/..";
    Link(fmt::format("{}/blobs/{}", up, blob_name), link);
  }
}

}  // namespace moetune::testing
