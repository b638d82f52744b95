// Integration: `moetune models` and model references through the real binary,
// with every store's variables pointed at a temporary folder (never the real
// home): what is listed, that a reference works as MODEL for a reader, that a
// name typed as a path gets the reference syntax, and that plain paths behave
// as before.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;

class ModelsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    fs::create_directories(dir_.File("src"));
    model_ = SynthModel(dir_.File("src/tiny.gguf"), "qwen3moe", "tiny", &error);
    ASSERT_FALSE(model_.empty()) << error;
    home_ = dir_.File("home");
    fs::create_directories(home_);
    // An Ollama store: the manifest names the blob.
    const std::string ollama = dir_.File("ollama");
    const std::string hex(64, 'a');
    fs::create_directories(ollama + "/blobs");
    fs::create_directories(ollama + "/manifests/registry.ollama.ai/library/tiny");
    fs::copy_file(model_, ollama + "/blobs/sha256-" + hex);
    std::ofstream(ollama + "/manifests/registry.ollama.ai/library/tiny/moe")
        << R"({"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model",)"
        << R"("digest":"sha256:)" << hex << R"(","size":)" << fs::file_size(model_) << "}]}";
    // A hub cache: a snapshot link into blobs/.
    const std::string repo = dir_.File("hub/models--org--Tiny-GGUF");
    fs::create_directories(repo + "/snapshots/" + std::string(40, '1'));
    fs::create_directories(repo + "/blobs");
    fs::create_directories(repo + "/refs");
    std::ofstream(repo + "/refs/main") << std::string(40, '1');
    fs::copy_file(model_, repo + "/blobs/" + std::string(64, 'b'));
    fs::create_symlink("../../blobs/" + std::string(64, 'b'),
                       repo + "/snapshots/" + std::string(40, '1') + "/tiny-Q4_K_M.gguf");
  }

  CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), MoetuneBinary());
    return RunCommand(args, 300,
                      {{"HOME", home_},
                       {"OLLAMA_MODELS", dir_.File("ollama")},
                       {"HF_HUB_CACHE", dir_.File("hub")},
                       {"HUGGINGFACE_HUB_CACHE", ""},
                       {"HF_HOME", ""},
                       {"XDG_CACHE_HOME", ""},
                       {"LLAMA_CACHE", dir_.File("llama-cache")}});
  }

  TempDir dir_;
  std::string model_;
  std::string home_;
};

TEST_F(ModelsCommandTest, ListsTheStoresWithReferences) {
  auto r = Run({"models", "--json", dir_.File("src")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> refs;
  for (const auto& m : j["models"]) {
    refs.push_back(m["reference"].is_null() ? "" : m["reference"].get<std::string>());
    EXPECT_EQ(m["details"]["architecture"], "qwen3moe") << m.dump();
    EXPECT_EQ(m["details"]["moe"], true);
    EXPECT_EQ(m["readable"], true);
  }
  EXPECT_EQ(refs, (std::vector<std::string>{"ollama:tiny:moe", "hf:org/Tiny-GGUF", ""}));
  EXPECT_EQ(j["models"][2]["store"], "folder");
  r = Run({"models"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ollama:tiny:moe"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Searched:"), std::string::npos) << r.out;
}

TEST_F(ModelsCommandTest, ReferencesWorkAsModelForReaders) {
  auto r = Run({"inspect", "ollama:tiny:moe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("moetune: ollama:tiny:moe is " + dir_.File("ollama") + "/blobs/sha256-"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["architecture"], "qwen3moe");
  r = Run({"plan", "hf:org/tiny-gguf:q4_k_m", "--ctx", "4K", "--vram", "8GiB"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tiny-Q4_K_M.gguf"), std::string::npos) << "the command names the file";
  r = Run({"doctor", "--model", "ollama:tiny:moe", "--ctx", "4K", "--no-save", "--no-bandwidth",
           "--no-engine", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ollama:tiny:moe is "), std::string::npos) << r.err;
}

TEST_F(ModelsCommandTest, NamesAndBadReferencesAreClearErrors) {
  auto r = Run({"inspect", "tiny:moe"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("a model of that name is here, as ollama:tiny:moe"), std::string::npos)
      << r.err;
  r = Run({"plan", "org/Tiny-GGUF", "--ctx", "4K"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("as hf:org/Tiny-GGUF"), std::string::npos) << r.err;
  r = Run({"inspect", "ollama:tiny:absent"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("with that name there is:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ollama:tiny:moe"), std::string::npos) << r.err;
  r = Run({"inspect", "hf:not-a-repo"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("of the form hf:ORG/REPO[:QUANT]"), std::string::npos) << r.err;
  // Plain paths as before: the reader's message; serve checks while parsing (exit 2).
  r = Run({"inspect", dir_.File("nope.gguf")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nope.gguf: no such file; check the path"), std::string::npos) << r.err;
  r = Run({"serve", dir_.File("nope.gguf")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("File does not exist"), std::string::npos) << r.err;
  r = Run({"serve", "qwen3.5:35b-a3b"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("ollama:NAME[:TAG]"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace moetune::itest
