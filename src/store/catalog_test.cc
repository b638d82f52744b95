#include "store/catalog.h"

#include <gtest/gtest.h>

#include "store/stores_test_util.h"

namespace moetune {
namespace {

using testing::AddHubFiles;
using testing::AddOllamaModel;
using testing::Hex;
using testing::StoreTestModels;
using testing::TempDir;
using testing::TempStoreEnv;

const StoredModel* Find(const ModelListing& l, const std::string& name) {
  for (const StoredModel* m : l.Models()) {
    if (m->name == name) return m;
  }
  return nullptr;
}

TEST(ModelCatalogTest, ListsEveryStoreWithWhatTheHeadersSay) {
  TempDir dir;
  auto env = TempStoreEnv(dir.path());
  const auto& m = StoreTestModels::Get();
  AddOllamaModel(env.home + "/.ollama/models", "registry.ollama.ai/library/tiny/moe", Hex('a'),
                 m.moe);
  AddHubFiles(env.home + "/.cache/huggingface/hub", "org/split-GGUF", std::string(40, '1'),
              {{"M-Q4_K_M-00001-of-00003.gguf", m.split[0]},
               {"M-Q4_K_M-00002-of-00003.gguf", m.split[1]},
               {"M-Q4_K_M-00003-of-00003.gguf", m.split[2]}});
  testing::CopyFile(m.dense, env.home + "/.lmstudio/models/pub/Dense-GGUF/dense-Q8_0.gguf");
  testing::CopyFile(m.dense, dir.File("mine/dense.gguf"));
  ListOptions opts;
  opts.folders = {dir.File("mine")};
  const ModelListing l = ListModels(env, opts);

  const StoredModel* moe = Find(l, "tiny:moe");
  ASSERT_NE(moe, nullptr);
  ASSERT_TRUE(moe->details) << moe->problem_message;
  EXPECT_EQ(moe->details->architecture, "qwen3moe");
  EXPECT_TRUE(moe->details->moe);
  EXPECT_EQ(moe->details->n_expert, 8u);
  EXPECT_EQ(moe->details->quant, "Q4_K_M") << "from general.file_type";

  const StoredModel* split = Find(l, "org/split-GGUF");
  ASSERT_NE(split, nullptr);
  ASSERT_TRUE(split->details) << split->problem_message;
  EXPECT_EQ(split->parts.size(), 3u);
  uint64_t total = 0;
  for (const auto& p : m.split) total += std::filesystem::file_size(p);
  EXPECT_EQ(split->size(), total);

  const StoredModel* dense = Find(l, "pub/Dense-GGUF");
  ASSERT_NE(dense, nullptr);
  ASSERT_TRUE(dense->details);
  EXPECT_FALSE(dense->details->moe);
  EXPECT_EQ(dense->details->architecture, "llama");
  EXPECT_EQ(dense->details->quant, "Q8_0");
  EXPECT_NE(Find(l, "dense.gguf"), nullptr) << "the named folder";
  EXPECT_EQ(l.places.back().root.kind, StoreKind::kFolder);
}

TEST(ModelCatalogTest, BrokenAndUnreadableEntriesAreListedWithTheirProblem) {
  TempDir dir;
  auto env = TempStoreEnv(dir.path(), testing::Stranger());
  const std::string root = env.home + "/.ollama/models";
  const std::string blob = AddOllamaModel(root, "registry.ollama.ai/library/locked/latest",
                                          Hex('a'), StoreTestModels::Get().moe);
  ASSERT_EQ(::chmod(blob.c_str(), 0600), 0);
  testing::WriteText(dir.File("mine/notgguf.gguf"), "this is not a model");
  ListOptions opts;
  opts.folders = {dir.File("mine")};
  const ModelListing l = ListModels(env, opts);
  const StoredModel* locked = Find(l, "locked:latest");
  ASSERT_NE(locked, nullptr);
  EXPECT_EQ(locked->problem, EntryProblem::kAccess);
  EXPECT_FALSE(locked->details) << "an unreadable file is not opened";
  EXPECT_EQ(locked->size(), std::filesystem::file_size(StoreTestModels::Get().moe));
  const StoredModel* junk = Find(l, "notgguf.gguf");
  ASSERT_NE(junk, nullptr);
  EXPECT_EQ(junk->problem, EntryProblem::kBadHeader);
}

TEST(ModelCatalogTest, HugeFilesAreReadByTheirHeaderOnly) {
  // A full-scale Qwen3-30B-A3B shape as a sparse file (~17 GB apparent, a few
  // MB on disk): listing it reads the header, never the weights.
  TempDir dir;
  auto env = TempStoreEnv(dir.path());
  SynthOptions o;
  o.spec = *SynthPreset("qwen3moe");
  o.quant = SynthQuant::kQ4_K_M;
  std::filesystem::create_directories(dir.File("big"));
  auto written = WriteSparseSynthModel(o, dir.File("big/Qwen3-30B-A3B-Q4_K_M.gguf"));
  ASSERT_TRUE(written.ok()) << written.error().message();
  ListOptions opts;
  opts.folders = {dir.File("big")};
  const ModelListing l = ListModels(env, opts);
  const StoredModel* big = Find(l, "Qwen3-30B-A3B-Q4_K_M.gguf");
  ASSERT_NE(big, nullptr);
  ASSERT_TRUE(big->details) << big->problem_message;
  EXPECT_GT(big->size(), uint64_t{10} << 30);
  EXPECT_EQ(big->details->n_expert, 128u);
}

}  // namespace
}  // namespace moetune
