// Each store's layout, built in a temporary folder as the tool writes it.
#include "store/scan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "store/stores_test_util.h"

namespace moetune {
namespace {

using testing::AddHubFiles;
using testing::AddOllamaModel;
using testing::Hex;
using testing::StoreTestModels;
using testing::TempDir;
using testing::TempStoreEnv;

RootScan Scan(StoreKind kind, const std::string& path, const StoreEnvironment& env) {
  return ScanRoot({kind, path, "test"}, env);
}

TEST(StoreScanTest, OllamaManifestsNameTheirModelBlobs) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  const std::string root = env.home + "/.ollama/models";
  const auto& m = StoreTestModels::Get();
  const std::string blob =
      AddOllamaModel(root, "registry.ollama.ai/library/qwen3/30b-a3b", Hex('a'), m.moe);
  AddOllamaModel(root, "registry.ollama.ai/someone/tiny/latest", Hex('b'), m.dense);
  AddOllamaModel(root, "hf.co/unsloth/Qwen3-30B-A3B-GGUF/Q4_K_M", Hex('a'), m.moe);
  const RootScan s = Scan(StoreKind::kOllama, root, env);
  EXPECT_TRUE(s.exists);
  ASSERT_EQ(s.models.size(), 3u);
  // Sorted by host, namespace, model, tag.
  EXPECT_EQ(s.models[0].name, "hf.co/unsloth/Qwen3-30B-A3B-GGUF:Q4_K_M");
  EXPECT_EQ(s.models[1].name, "qwen3:30b-a3b");
  EXPECT_EQ(s.models[2].name, "someone/tiny:latest");
  const StoredModel& q = s.models[1];
  EXPECT_EQ(q.store, StoreKind::kOllama);
  EXPECT_EQ(q.path, blob);
  EXPECT_EQ(q.file, "blobs/sha256-" + Hex('a'));
  EXPECT_EQ(q.digest, "sha256:" + Hex('a'));
  EXPECT_EQ(q.tag, "30b-a3b");
  EXPECT_EQ(q.ollama_path, "registry.ollama.ai/library/qwen3");
  EXPECT_EQ(q.declared_size, std::filesystem::file_size(m.moe));
  EXPECT_TRUE(q.usable()) << q.problem_message;
}

TEST(StoreScanTest, OllamaDanglingBadAndNonGgufManifestsAreProblems) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  const std::string root = env.home + "/.ollama/models";
  AddOllamaModel(root, "registry.ollama.ai/library/gone/latest", Hex('e'), "");  // no blob
  testing::WriteText(root + "/manifests/registry.ollama.ai/library/junk/latest", "{not json");
  testing::WriteText(root + "/manifests/registry.ollama.ai/library/img/latest",
                     testing::OllamaManifest(Hex('f'), 10, "application/vnd.ollama.image.tensor"));
  std::filesystem::create_directories(root + "/blobs");
  const RootScan s = Scan(StoreKind::kOllama, root, env);
  ASSERT_EQ(s.models.size(), 3u);
  EXPECT_EQ(s.models[0].problem, EntryProblem::kMissingBlob);
  EXPECT_NE(s.models[0].problem_message.find("which is missing"), std::string::npos);
  EXPECT_NE(s.models[0].problem_message.find("ollama pull gone:latest"), std::string::npos);
  EXPECT_EQ(s.models[1].problem, EntryProblem::kNoModelLayer);
  EXPECT_NE(s.models[1].problem_message.find("application/vnd.ollama.image.tensor"),
            std::string::npos);
  EXPECT_EQ(s.models[2].problem, EntryProblem::kBadManifest);
}

TEST(StoreScanTest, OllamaServiceStoreClosedToTheUserSaysWhy) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path(), testing::Stranger());
  const std::string home = env.system_root + "/usr/share/ollama";
  const std::string root = home + "/.ollama/models";
  const std::string blob = AddOllamaModel(root, "registry.ollama.ai/library/qwen3/8b", Hex('a'),
                                          StoreTestModels::Get().moe);
  // Open folders, an owner-only blob (Ollama's `create` wrote 0600 blobs
  // until commit bdc4308 of 2024-08): the entry is listed, unreadable.
  ASSERT_EQ(::chmod(blob.c_str(), 0600), 0);
  RootScan s = Scan(StoreKind::kOllama, root, env);
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].problem, EntryProblem::kAccess);
  EXPECT_EQ(s.models[0].access.status, AccessStatus::kNoRead);
  EXPECT_NE(s.models[0].problem_message.find("cannot read " + blob), std::string::npos);
  EXPECT_NE(s.models[0].problem_message.find("Ollama's files belong to the user"),
            std::string::npos);
  // The service's home made owner-only (useradd's HOME_MODE 0700): nothing can be listed.
  ASSERT_EQ(::chmod(home.c_str(), 0700), 0);
  s = Scan(StoreKind::kOllama, root, env);
  EXPECT_TRUE(s.exists);
  EXPECT_TRUE(s.models.empty());
  EXPECT_EQ(s.access.status, AccessStatus::kNoSearch);
  EXPECT_EQ(s.access.blocker, home);
}

TEST(StoreScanTest, HubCacheReadsTheSnapshotOfMain) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  const std::string root = env.home + "/.cache/huggingface/hub";
  const auto& m = StoreTestModels::Get();
  const std::string main = std::string(40, '1');
  AddHubFiles(root, "unsloth/Qwen3-30B-A3B-GGUF", main,
              {{"Qwen3-30B-A3B-Q4_K_M.gguf", m.moe},
               {"Q8_0/Qwen3-30B-A3B-Q8_0-00001-of-00003.gguf", m.split[0]},
               {"Q8_0/Qwen3-30B-A3B-Q8_0-00002-of-00003.gguf", m.split[1]},
               {"Q8_0/Qwen3-30B-A3B-Q8_0-00003-of-00003.gguf", m.split[2]},
               {"mmproj-F16.gguf", m.dense},
               {"README.md", ""}});
  // An older revision, no longer main: not read.
  AddHubFiles(root, "unsloth/Qwen3-30B-A3B-GGUF", std::string(40, '2'),
              {{"Qwen3-30B-A3B-Q2_K.gguf", m.dense}}, false);
  const RootScan s = Scan(StoreKind::kHuggingFace, root, env);
  ASSERT_EQ(s.models.size(), 2u);
  const StoredModel& split = s.models[0];
  EXPECT_EQ(split.name, "unsloth/Qwen3-30B-A3B-GGUF");
  EXPECT_EQ(split.file, "Q8_0/Qwen3-30B-A3B-Q8_0-00001-of-00003.gguf");
  EXPECT_EQ(split.path, root + "/models--unsloth--Qwen3-30B-A3B-GGUF/snapshots/" + main +
                            "/Q8_0/Qwen3-30B-A3B-Q8_0-00001-of-00003.gguf")
      << "the snapshot's link, so that the reader finds the other parts beside it";
  EXPECT_EQ(split.parts.size(), 3u);
  EXPECT_EQ(split.tag, "Q8_0");
  EXPECT_TRUE(split.usable()) << split.problem_message;
  EXPECT_EQ(s.models[1].file, "Qwen3-30B-A3B-Q4_K_M.gguf");
  EXPECT_EQ(s.models[1].size(), std::filesystem::file_size(m.moe));
  EXPECT_EQ(s.models[1].digest.size(), 64u) << "the blob it links to";
}

TEST(StoreScanTest, HubCacheWithoutRefsReadsEverySnapshotAndFlagsDanglingLinks) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  const std::string root = dir.File("hub");
  AddHubFiles(root, "org/repo", std::string(40, '3'), {{"m-Q4_0.gguf", ""}}, false);
  const RootScan s = Scan(StoreKind::kHuggingFace, root, env);
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].problem, EntryProblem::kMissingBlob);
  EXPECT_NE(s.models[0].problem_message.find("which is missing from the cache"), std::string::npos);
  EXPECT_NE(s.models[0].problem_message.find("hf download org/repo m-Q4_0.gguf"), std::string::npos)
      << s.models[0].problem_message;
}

TEST(StoreScanTest, LlamaCppCacheReadsBothLayouts) {
  TempDir dir;
  auto env = TempStoreEnv(dir.path());
  const std::string cache = dir.File("llama-cache");
  env.env["LLAMA_CACHE"] = cache;
  const auto& m = StoreTestModels::Get();
  // Before March 2026: "<org>_<repo>_<file>" beside "manifest=<org>=<repo>=<tag>.json".
  testing::CopyFile(m.moe, cache + "/unsloth_Qwen3-30B-A3B-GGUF_Qwen3-30B-A3B-Q4_K_M.gguf");
  testing::WriteText(cache + "/unsloth_Qwen3-30B-A3B-GGUF_Qwen3-30B-A3B-Q4_K_M.gguf.etag", "x");
  testing::WriteText(cache + "/manifest=unsloth=Qwen3-30B-A3B-GGUF=Q4_K_M.json", "{}");
  testing::CopyFile(m.dense, cache + "/bartowski_Llama-3.2-1B-GGUF_Llama-3.2-1B-Q8_0.gguf");
  testing::WriteText(cache + "/x.gguf.downloadInProgress", "partial");
  // Since then: the hub layout under $LLAMA_CACHE.
  AddHubFiles(cache, "ggml-org/gpt-oss-20b-GGUF", std::string(40, '4'),
              {{"gpt-oss-20b-mxfp4.gguf", m.moe}});
  const RootScan s = Scan(StoreKind::kLlamaCache, cache, env);
  ASSERT_EQ(s.models.size(), 3u);
  EXPECT_EQ(s.models[0].name, "ggml-org/gpt-oss-20b-GGUF");
  EXPECT_EQ(s.models[0].store, StoreKind::kLlamaCache);
  EXPECT_EQ(s.models[1].file, "bartowski_Llama-3.2-1B-GGUF_Llama-3.2-1B-Q8_0.gguf");
  EXPECT_EQ(s.models[1].name, "") << "no manifest says where the org ends";
  EXPECT_EQ(s.models[2].name, "unsloth/Qwen3-30B-A3B-GGUF");
  EXPECT_EQ(s.models[2].file, "Qwen3-30B-A3B-Q4_K_M.gguf") << "the path inside the repository";
  EXPECT_EQ(s.models[2].path, cache + "/unsloth_Qwen3-30B-A3B-GGUF_Qwen3-30B-A3B-Q4_K_M.gguf");
  EXPECT_EQ(s.models[2].tag, "Q4_K_M");
}

TEST(StoreScanTest, LmStudioModelsArePublisherModelFolders) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  const std::string root = env.home + "/.lmstudio/models";
  const auto& m = StoreTestModels::Get();
  testing::CopyFile(m.moe,
                    root + "/lmstudio-community/Qwen3-30B-A3B-GGUF/Qwen3-30B-A3B-Q4_K_M.gguf");
  testing::CopyFile(m.dense, root + "/stray.gguf");  // LM Studio does not see it either
  const RootScan s = Scan(StoreKind::kLmStudio, root, env);
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].name, "lmstudio-community/Qwen3-30B-A3B-GGUF");
  EXPECT_EQ(s.models[0].tag, "Q4_K_M");
  EXPECT_TRUE(s.models[0].usable());
}

TEST(StoreScanTest, NamedFolderFileAndStoreLayoutsAreRecognised) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  const auto& m = StoreTestModels::Get();
  testing::CopyFile(m.moe, dir.File("mine/deep/er/a.gguf"));
  for (size_t i = 0; i < m.split.size(); ++i) {
    testing::CopyFile(m.split[i], dir.File(fmt::format("mine/s-0000{}-of-00003.gguf", i + 1)));
  }
  ASSERT_EQ(::mkfifo(dir.File("mine/pipe.gguf").c_str(), 0644), 0);
  RootScan s = Scan(StoreKind::kFolder, dir.File("mine"), env);
  ASSERT_EQ(s.models.size(), 3u);
  EXPECT_EQ(s.models[0].name, "deep/er/a.gguf");
  EXPECT_EQ(s.models[1].problem, EntryProblem::kAccess) << "a FIFO is listed, not opened";
  EXPECT_EQ(s.models[1].access.status, AccessStatus::kNotRegular);
  EXPECT_EQ(s.models[2].parts.size(), 3u);
  // One file, with its split siblings found beside it.
  s = Scan(StoreKind::kFolder, dir.File("mine/s-00002-of-00003.gguf"), env);
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].path, dir.File("mine/s-00001-of-00003.gguf"));
  // A folder that is an Ollama store or a hub cache is read as one.
  AddOllamaModel(dir.File("other-ollama"), "registry.ollama.ai/library/x/latest", Hex('a'), m.moe);
  s = Scan(StoreKind::kFolder, dir.File("other-ollama"), env);
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].name, "x:latest");
  AddHubFiles(dir.File("other-hub"), "o/r", std::string(40, '5'), {{"f.gguf", m.moe}});
  s = Scan(StoreKind::kFolder, dir.File("other-hub"), env);
  ASSERT_EQ(s.models.size(), 1u);
  EXPECT_EQ(s.models[0].name, "o/r");
  EXPECT_FALSE(Scan(StoreKind::kFolder, dir.File("absent"), env).exists);
}

}  // namespace
}  // namespace moetune
