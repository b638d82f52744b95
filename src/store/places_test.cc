#include "store/places.h"

#include <gtest/gtest.h>

#include "store/stores_test_util.h"

namespace moetune {
namespace {

using testing::TempDir;
using testing::TempStoreEnv;

std::vector<std::string> Paths(const std::vector<StoreRoot>& roots) {
  std::vector<std::string> out;
  out.reserve(roots.size());
  for (const auto& r : roots) out.push_back(r.path);
  return out;
}

TEST(StorePlacesTest, DefaultsUnderTheHomeAndTheOllamaService) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  const std::string h = env.home;
  EXPECT_EQ(Paths(StoreRootsOf(env, StoreKind::kOllama)),
            (std::vector<std::string>{h + "/.ollama/models",
                                      dir.path() + "/sys/usr/share/ollama/.ollama/models"}));
  EXPECT_EQ(Paths(StoreRootsOf(env, StoreKind::kHuggingFace)),
            std::vector<std::string>{h + "/.cache/huggingface/hub"});
  EXPECT_EQ(Paths(StoreRootsOf(env, StoreKind::kLlamaCache)),
            std::vector<std::string>{h + "/.cache/llama.cpp"});
  EXPECT_EQ(Paths(StoreRootsOf(env, StoreKind::kLmStudio)),
            (std::vector<std::string>{h + "/.lmstudio/models", h + "/.cache/lm-studio/models"}));
}

TEST(StorePlacesTest, VariablesComeFirstAndDuplicatesGo) {
  TempDir dir;
  auto env = TempStoreEnv(dir.path());
  const std::string h = env.home;
  env.env = {{"OLLAMA_MODELS", "/srv/ollama"},
             {"HF_HUB_CACHE", h + "/.cache/huggingface/hub/"},  // the default, spelled otherwise
             {"HUGGINGFACE_HUB_CACHE", "/old/hub"},
             {"HF_HOME", "/hf"},
             {"XDG_CACHE_HOME", "/xdg"},
             {"LLAMA_CACHE", "/llama"}};
  const auto ollama = StoreRootsOf(env, StoreKind::kOllama);
  ASSERT_EQ(ollama.size(), 3u);
  EXPECT_EQ(ollama[0].path, "/srv/ollama");
  EXPECT_EQ(ollama[0].source, "OLLAMA_MODELS");
  EXPECT_EQ(Paths(StoreRootsOf(env, StoreKind::kHuggingFace)),
            (std::vector<std::string>{h + "/.cache/huggingface/hub", "/old/hub", "/hf/hub",
                                      "/xdg/huggingface/hub"}));
  EXPECT_EQ(Paths(StoreRootsOf(env, StoreKind::kLlamaCache)),
            (std::vector<std::string>{"/llama", "/xdg/llama.cpp", h + "/.cache/llama.cpp"}));
}

TEST(StorePlacesTest, LmStudioHomePointerIsFollowedWhenItNamesAFolder) {
  TempDir dir;
  const auto env = TempStoreEnv(dir.path());
  testing::WriteText(env.home + "/.lmstudio-home-pointer", dir.path() + "/lms\n");
  EXPECT_EQ(StoreRootsOf(env, StoreKind::kLmStudio).size(), 2u) << "the folder does not exist yet";
  std::filesystem::create_directories(dir.path() + "/lms");
  const auto roots = StoreRootsOf(env, StoreKind::kLmStudio);
  ASSERT_EQ(roots.size(), 3u);
  EXPECT_EQ(roots[0].path, dir.path() + "/lms/models");
  EXPECT_EQ(roots[0].source, "~/.lmstudio-home-pointer");
}

TEST(StorePlacesTest, CurrentReadsTheProcess) {
  const auto env = StoreEnvironment::Current();
  EXPECT_FALSE(env.home.empty());
  EXPECT_EQ(env.system_root, "");
  EXPECT_FALSE(env.identity.gids.empty());
  EXPECT_EQ(env.identity.uid, ::geteuid());
}

}  // namespace
}  // namespace moetune
