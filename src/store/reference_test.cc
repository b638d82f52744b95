// Resolution of every reference form against stores built in a temporary folder.
#include "store/reference.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "gguf/split.h"
#include "store/scan.h"
#include "store/stores_test_util.h"

namespace moetune {
namespace {

using testing::AddHubFiles;
using testing::AddOllamaModel;
using testing::Hex;
using testing::StoreTestModels;
using testing::TempDir;
using testing::TempStoreEnv;

class ReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = TempStoreEnv(dir_.path());
    ollama_ = env_.home + "/.ollama/models";
    service_ = env_.system_root + "/usr/share/ollama/.ollama/models";
    hub_ = env_.home + "/.cache/huggingface/hub";
  }
  Result<ResolvedModel> Resolve(const std::string& text) const {
    return ResolveModelArgument(text, env_);
  }
  static void ExpectError(const Result<ResolvedModel>& r, ErrorKind kind,
                          const std::vector<std::string>& needles) {
    ASSERT_FALSE(r.ok()) << r->path;
    EXPECT_EQ(r.error().kind(), kind) << r.error().message();
    for (const auto& n : needles) {
      EXPECT_NE(r.error().message().find(n), std::string::npos)
          << "'" << n << "' not in: " << r.error().message();
    }
  }
  const StoreTestModels& m_ = StoreTestModels::Get();
  TempDir dir_;
  StoreEnvironment env_;
  std::string ollama_, service_, hub_;
};

TEST(ModelReferenceParseTest, FormsAndDefaults) {
  auto r = ParseModelReference("ollama:qwen3");
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ((*r)->store, StoreKind::kOllama);
  EXPECT_EQ((*r)->ollama.Display(), "qwen3:latest");
  r = ParseModelReference("OLLAMA:hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M");
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ((*r)->ollama.host, "hf.co");
  EXPECT_EQ((*r)->ollama.ns, "unsloth");
  EXPECT_EQ((*r)->ollama.tag, "Q4_K_M");
  r = ParseModelReference("hf:unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M");
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ((*r)->repo, "unsloth/Qwen3-30B-A3B-GGUF");
  EXPECT_EQ((*r)->quant, "Q4_K_M");
  r = ParseModelReference("lmstudio:lmstudio-community/Qwen3-30B-A3B-GGUF");
  ASSERT_TRUE(r && r->ok());
  EXPECT_EQ((*r)->store, StoreKind::kLmStudio);
  EXPECT_EQ((*r)->quant, "");
  for (const char* bad : {"hf:norepo", "hf:a/b/c", "hf:a/b:", "lmstudio:x", "ollama:", "ollama:a b",
                          "ollama:qwen3:"}) {
    r = ParseModelReference(bad);
    ASSERT_TRUE(r) << bad;
    ASSERT_FALSE(r->ok()) << bad;
    EXPECT_EQ(r->error().kind(), ErrorKind::kInvalidArgument);
    EXPECT_NE(r->error().message().find("of the form"), std::string::npos) << bad;
  }
  EXPECT_FALSE(ParseModelReference("models/qwen3.gguf"));
  EXPECT_FALSE(ParseModelReference("qwen3:8b"));
}

TEST_F(ReferenceTest, OllamaNameAndTagAnyCase) {
  const std::string blob =
      AddOllamaModel(ollama_, "registry.ollama.ai/library/qwen3/30b-a3b", Hex('a'), m_.moe);
  AddOllamaModel(ollama_, "registry.ollama.ai/library/qwen3/latest", Hex('b'), m_.dense);
  auto r = Resolve("ollama:qwen3:30b-a3b");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, blob);
  ASSERT_TRUE(r->model);
  EXPECT_EQ(r->model->name, "qwen3:30b-a3b");
  r = Resolve("ollama:Qwen3:30B-A3B");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, blob);
  r = Resolve("ollama:registry.ollama.ai/library/qwen3");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, ollama_ + "/blobs/sha256-" + Hex('b')) << "the tag defaults to latest";
}

TEST_F(ReferenceTest, OllamaMissingTagListsTheTagsThereAre) {
  AddOllamaModel(ollama_, "registry.ollama.ai/library/qwen3/30b-a3b", Hex('a'), m_.moe);
  AddOllamaModel(ollama_, "registry.ollama.ai/library/llama3/8b", Hex('b'), m_.dense);
  ExpectError(Resolve("ollama:qwen3:235b"), ErrorKind::kNotFound,
              {"ollama:qwen3:235b: no such model in Ollama's stores", "`ollama pull qwen3:235b`",
               "with that name there is:", "ollama:qwen3:30b-a3b",
               "searched:", ollama_ + " (default (~/.ollama/models)): 2 model(s)",
               service_ + " (Ollama's Linux service (user ollama)): not there", "moetune models"});
  auto r = Resolve("ollama:mistral");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("there is:\n  ollama:llama3:8b"), std::string::npos)
      << r.error().message();
}

TEST_F(ReferenceTest, OllamaUnreadableBlobGetsTheReasonAndTheFix) {
  env_.identity = testing::Stranger();
  const std::string blob =
      AddOllamaModel(service_, "registry.ollama.ai/library/qwen3/8b", Hex('a'), m_.moe);
  ASSERT_EQ(::chmod(blob.c_str(), 0600), 0);
  ExpectError(Resolve("ollama:qwen3:8b"), ErrorKind::kIo,
              {"ollama:qwen3:8b is " + blob, "cannot read " + blob, "mode 0600",
               "may be read by only its owner", "sudo -u", "usermod -aG", "install -m 0644"});
  // The service's home closed (0700): the store cannot even be searched.
  const std::string home = env_.system_root + "/usr/share/ollama";
  ASSERT_EQ(::chmod(home.c_str(), 0700), 0);
  ExpectError(Resolve("ollama:qwen3:8b"), ErrorKind::kNotFound,
              {"no such model", "cannot be searched: the folder " + home, "lets in only its owner",
               "sudo chmod g+rx " + home});
}

TEST_F(ReferenceTest, OllamaDanglingManifestSaysPullAgain) {
  AddOllamaModel(ollama_, "registry.ollama.ai/library/gone/latest", Hex('e'), "");
  ExpectError(Resolve("ollama:gone"), ErrorKind::kNotFound,
              {"names the blob", "which is missing", "ollama pull gone:latest"});
}

TEST_F(ReferenceTest, OllamaNameInTwoStores) {
  // The same blob in the user's store (unreadable) and the service's: one
  // model, and the copy this user can read is the one used.
  env_.identity = testing::Stranger();
  const std::string mine =
      AddOllamaModel(ollama_, "registry.ollama.ai/library/qwen3/8b", Hex('a'), m_.moe);
  ASSERT_EQ(::chmod(mine.c_str(), 0600), 0);
  const std::string theirs =
      AddOllamaModel(service_, "registry.ollama.ai/library/qwen3/8b", Hex('a'), m_.moe);
  auto r = Resolve("ollama:qwen3:8b");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, theirs);
  // Different blobs under one name: which one is meant is the user's choice.
  AddOllamaModel(service_, "registry.ollama.ai/library/qwen3/8b", Hex('b'), m_.dense);
  ExpectError(Resolve("ollama:qwen3:8b"), ErrorKind::kInvalidArgument,
              {"names 2 models", mine, service_ + "/blobs/sha256-" + Hex('b')});
}

TEST_F(ReferenceTest, HfRepoQuantByFileNameAndByFileType) {
  const std::string c = std::string(40, '1');
  AddHubFiles(hub_, "unsloth/Qwen3-30B-A3B-GGUF", c,
              {{"Qwen3-30B-A3B-Q4_K_M.gguf", m_.moe}, {"Qwen3-30B-A3B-Q8_0.gguf", m_.dense}});
  const std::string snap = hub_ + "/models--unsloth--Qwen3-30B-A3B-GGUF/snapshots/" + c + "/";
  auto r = Resolve("hf:unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, snap + "Qwen3-30B-A3B-Q4_K_M.gguf");
  r = Resolve("hf:UNSLOTH/qwen3-30b-a3b-gguf:q8_0");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, snap + "Qwen3-30B-A3B-Q8_0.gguf");
  ExpectError(Resolve("hf:unsloth/Qwen3-30B-A3B-GGUF"), ErrorKind::kInvalidArgument,
              {"names 2 models", "hf:unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M",
               "hf:unsloth/Qwen3-30B-A3B-GGUF:Q8_0"});
  ExpectError(Resolve("hf:unsloth/Qwen3-30B-A3B-GGUF:Q2_K"), ErrorKind::kNotFound,
              {"with that name there is:", "hf:unsloth/Qwen3-30B-A3B-GGUF:Q8_0",
               "llama-server -hf unsloth/Qwen3-30B-A3B-GGUF:Q2_K"});
  // No quant in the file names: the header's file type decides.
  AddHubFiles(hub_, "someone/plain", c, {{"a/model.gguf", m_.moe}, {"b/model.gguf", m_.dense}});
  r = Resolve("hf:someone/plain:Q4_K_M");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, hub_ + "/models--someone--plain/snapshots/" + c + "/a/model.gguf");
}

TEST_F(ReferenceTest, HfSplitModelResolvesToPartOneAndTheReaderFindsTheRest) {
  const std::string c = std::string(40, '2');
  AddHubFiles(hub_, "org/big-GGUF", c,
              {{"Q4_K_M/big-Q4_K_M-00001-of-00003.gguf", m_.split[0]},
               {"Q4_K_M/big-Q4_K_M-00002-of-00003.gguf", m_.split[1]},
               {"Q4_K_M/big-Q4_K_M-00003-of-00003.gguf", m_.split[2]}});
  auto r = Resolve("hf:org/big-GGUF:Q4_K_M");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, hub_ + "/models--org--big-GGUF/snapshots/" + c +
                         "/Q4_K_M/big-Q4_K_M-00001-of-00003.gguf");
  auto model = OpenGgufModel(r->path);
  ASSERT_TRUE(model.ok()) << model.error().message();
  EXPECT_EQ(model->parts.size(), 3u);
}

TEST_F(ReferenceTest, HfDanglingLinkAndMissingPartAreNamed) {
  const std::string c = std::string(40, '3');
  AddHubFiles(hub_, "org/broken", c, {{"m-Q4_0.gguf", ""}});
  ExpectError(Resolve("hf:org/broken"), ErrorKind::kNotFound,
              {"which is missing from the cache", "hf download org/broken m-Q4_0.gguf"});
  AddHubFiles(hub_, "org/halves", c, {{"h-00001-of-00002.gguf", m_.split[0]}});
  ExpectError(Resolve("hf:org/halves"), ErrorKind::kNotFound,
              {"split part 2 of 2 is missing", "h-00002-of-00002.gguf"});
}

TEST_F(ReferenceTest, HfRepoInTheHubCacheAndLlamaCppCaches) {
  const std::string c = std::string(40, '4');
  AddHubFiles(hub_, "org/r-GGUF", c, {{"r-Q4_K_M.gguf", m_.moe}});
  // llama.cpp since March 2026 with LLAMA_CACHE: the same blob in its own hub
  // layout is the same file, counted once.
  env_.env["LLAMA_CACHE"] = dir_.File("llama");
  AddHubFiles(dir_.File("llama"), "org/r-GGUF", c, {{"r-Q4_K_M.gguf", m_.moe}});
  auto r = Resolve("hf:org/r-GGUF");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, hub_ + "/models--org--r-GGUF/snapshots/" + c + "/r-Q4_K_M.gguf");
  // An older llama.cpp's flat copy has no digest: two files, the user picks.
  testing::CopyFile(m_.moe, env_.home + "/.cache/llama.cpp/org_r-GGUF_r-Q4_K_M.gguf");
  ExpectError(Resolve("hf:org/r-GGUF"), ErrorKind::kInvalidArgument,
              {"names 2 models", env_.home + "/.cache/llama.cpp/org_r-GGUF_r-Q4_K_M.gguf"});
  // Only the flat file (no manifest): found by its "<org>_<repo>_" prefix.
  std::filesystem::remove_all(hub_);
  std::filesystem::remove_all(dir_.File("llama"));
  r = Resolve("hf:ORG/r-gguf:Q4_K_M");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, env_.home + "/.cache/llama.cpp/org_r-GGUF_r-Q4_K_M.gguf");
}

TEST_F(ReferenceTest, LmStudioPublisherModelAndQuant) {
  const std::string root = env_.home + "/.lmstudio/models/lmstudio-community/Qwen3-GGUF/";
  testing::CopyFile(m_.moe, root + "Qwen3-Q4_K_M.gguf");
  testing::CopyFile(m_.dense, root + "Qwen3-Q8_0.gguf");
  auto r = Resolve("lmstudio:LMStudio-Community/qwen3-gguf:Q8_0");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->path, root + "Qwen3-Q8_0.gguf");
  ExpectError(Resolve("lmstudio:lmstudio-community/Qwen3-GGUF"), ErrorKind::kInvalidArgument,
              {"names 2 models", "lmstudio:lmstudio-community/Qwen3-GGUF:Q4_K_M"});
  ExpectError(Resolve("lmstudio:nobody/nothing"), ErrorKind::kNotFound,
              {"no such model in LM Studio's models folder", "there is:"});
}

TEST_F(ReferenceTest, PlainPathsStayAsTheyAre) {
  // An existing file, even one named like a reference, is the user's file.
  testing::CopyFile(m_.moe, dir_.File("qwen3:8b"));
  auto r = Resolve(dir_.File("qwen3:8b"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->path, dir_.File("qwen3:8b"));
  EXPECT_FALSE(r->model);
  // A missing path that is a path: returned for the reader to report as before.
  for (const std::string& p : {dir_.File("absent.gguf"), std::string("models/x.gguf"),
                               std::string("./qwen3:8b"), std::string("")}) {
    r = Resolve(p);
    ASSERT_TRUE(r.ok()) << p << ": " << r.error().message();
    EXPECT_EQ(r->path, p);
  }
}

TEST_F(ReferenceTest, MissingPathShapedLikeANameGetsTheReferenceSyntax) {
  ExpectError(Resolve("qwen3.5:35b-a3b"), ErrorKind::kNotFound,
              {"qwen3.5:35b-a3b: no such file", "ollama:NAME[:TAG]", "hf:ORG/REPO[:QUANT]",
               "lmstudio:PUBLISHER/MODEL[:QUANT]", "moetune models"});
  ExpectError(Resolve("unsloth/Qwen3.5-35B-A3B-GGUF"), ErrorKind::kNotFound,
              {"no such file", "hf:ORG/REPO[:QUANT]"});
  // Present in a store: the hint names the reference that finds it.
  const std::string blob =
      AddOllamaModel(ollama_, "registry.ollama.ai/library/qwen3.5/35b-a3b", Hex('a'), m_.moe);
  ExpectError(Resolve("qwen3.5:35b-a3b"), ErrorKind::kNotFound,
              {"a model of that name is here, as ollama:qwen3.5:35b-a3b (" + blob + ")"});
  AddHubFiles(hub_, "unsloth/Qwen3.5-35B-A3B-GGUF", std::string(40, '5'),
              {{"Qwen3.5-35B-A3B-Q4_K_M.gguf", m_.moe}});
  ExpectError(Resolve("unsloth/Qwen3.5-35B-A3B-GGUF"), ErrorKind::kNotFound,
              {"as hf:unsloth/Qwen3.5-35B-A3B-GGUF ("});
  // A bare word is a file name unless a store has it.
  auto r = Resolve("mymodel");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->path, "mymodel");
  AddOllamaModel(ollama_, "registry.ollama.ai/library/mymodel/latest", Hex('b'), m_.dense);
  ExpectError(Resolve("mymodel"), ErrorKind::kNotFound, {"as ollama:mymodel ("});
}

TEST_F(ReferenceTest, ReferenceForIsTheShortestThatSelectsOnlyThatModel) {
  const std::string c = std::string(40, '6');
  AddHubFiles(hub_, "o/one", c, {{"one-Q4_K_M.gguf", m_.moe}});
  AddHubFiles(hub_, "o/two", c, {{"two-Q4_K_M.gguf", m_.moe}, {"two-Q8_0.gguf", m_.dense}});
  AddOllamaModel(ollama_, "registry.ollama.ai/library/x/latest", Hex('a'), m_.moe);
  std::vector<RootScan> scans;
  for (const auto& root : StoreRoots(env_)) scans.push_back(ScanRoot(root, env_));
  std::vector<const StoredModel*> all;
  for (const auto& s : scans) {
    for (const auto& m : s.models) all.push_back(&m);
  }
  std::vector<std::string> refs;
  refs.reserve(all.size());
  for (const StoredModel* m : all) refs.push_back(ReferenceFor(*m, all));
  EXPECT_EQ(refs, (std::vector<std::string>{"ollama:x:latest", "hf:o/one", "hf:o/two:Q4_K_M",
                                            "hf:o/two:Q8_0"}));
}

}  // namespace
}  // namespace moetune
