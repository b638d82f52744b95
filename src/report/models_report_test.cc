#include "report/models_report.h"

#include <fmt/format.h>
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

TEST(ModelsReportTest, TableAndJsonOfEveryStore) {
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
  const StoredModel* moe = l.Models().front();
  ASSERT_TRUE(moe->details);

  const std::string text = FormatModelListing(l);
  EXPECT_NE(text.find("4 model(s) on this machine"), std::string::npos) << text;
  EXPECT_NE(text.find("| ollama:tiny:moe "), std::string::npos) << text;
  EXPECT_NE(text.find("| hf:org/split-GGUF "), std::string::npos) << text;
  EXPECT_NE(text.find("| lmstudio:pub/Dense-GGUF "), std::string::npos) << text;
  EXPECT_NE(text.find("| (folder) dense.gguf "), std::string::npos) << text;
  EXPECT_NE(
      text.find(fmt::format("MoE {}/{}", moe->details->n_expert_used, moe->details->n_expert)),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("| dense "), std::string::npos) << text;
  EXPECT_NE(text.find(env.home + "/.ollama/models (ollama, default (~/.ollama/models)): 1 model"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(ollama, Ollama's Linux service (user ollama)): not there"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Problems:"), std::string::npos) << text;

  const auto j = ModelListingToJson(l);
  ASSERT_EQ(j["models"].size(), 4u);
  const auto& first = j["models"][0];
  EXPECT_EQ(first["store"], "ollama");
  EXPECT_EQ(first["reference"], "ollama:tiny:moe");
  EXPECT_EQ(first["name"], "tiny:moe");
  EXPECT_EQ(first["digest"], "sha256:" + Hex('a'));
  EXPECT_EQ(first["readable"], true);
  EXPECT_EQ(first["usable"], true);
  EXPECT_EQ(first["details"]["moe"], true);
  EXPECT_EQ(first["details"]["quant"], "Q4_K_M");
  EXPECT_EQ(first["parts"].size(), 1u);
  EXPECT_TRUE(first["problem"].is_null());
  EXPECT_EQ(j["models"][1]["parts"].size(), 3u);
  EXPECT_TRUE(j["models"][3]["reference"].is_null()) << "a named folder's file";
  EXPECT_EQ(j["models"][3]["store"], "folder");
  ASSERT_EQ(j["searched"].size(), 7u);
  EXPECT_EQ(j["searched"][0]["models"], 1);
  EXPECT_EQ(j["searched"][1]["exists"], false);
  EXPECT_EQ(j["searched"][6]["source"], "named on the command line");
}

TEST(ModelsReportTest, ProblemsAndClosedStoresCarryTheirFix) {
  TempDir dir;
  auto env = TempStoreEnv(dir.path(), testing::Stranger());
  const std::string blob =
      AddOllamaModel(env.home + "/.ollama/models", "registry.ollama.ai/library/locked/latest",
                     Hex('a'), StoreTestModels::Get().moe);
  ASSERT_EQ(::chmod(blob.c_str(), 0600), 0);
  const std::string service = env.system_root + "/usr/share/ollama";
  std::filesystem::create_directories(service + "/.ollama/models");
  ASSERT_EQ(::chmod(service.c_str(), 0700), 0);
  const ModelListing l = ListModels(env, {});
  const std::string text = FormatModelListing(l);
  EXPECT_NE(text.find("| no: unreadable "), std::string::npos) << text;
  EXPECT_NE(text.find("Problems:\n- ollama:locked:latest: cannot read " + blob), std::string::npos)
      << text;
  EXPECT_NE(text.find("cannot be searched: the folder " + service), std::string::npos) << text;
  EXPECT_NE(text.find("sudo chmod g+rx " + service), std::string::npos) << text;
  const auto j = ModelListingToJson(l);
  EXPECT_EQ(j["models"][0]["readable"], false);
  EXPECT_EQ(j["models"][0]["usable"], false);
  EXPECT_EQ(j["models"][0]["problem"]["kind"], "unreadable");
  EXPECT_TRUE(j["models"][0]["details"].is_null());
  EXPECT_EQ(j["searched"][1]["searchable"], false);
  EXPECT_NE(j["searched"][1]["fix"].get<std::string>().find("sudo -u"), std::string::npos);
}

}  // namespace
}  // namespace moetune
