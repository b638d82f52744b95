#include "config/flags.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace moetune {
namespace {

TEST(Flags, TableFollowsTheEnumAndEverySpellingIsOneFlags) {
  std::set<std::string> spellings, envs, keys;
  for (std::size_t i = 0; i < Flags().size(); ++i) {
    const FlagSpec& f = Flags()[i];
    EXPECT_EQ(static_cast<std::size_t>(f.id), i) << f.spelling;
    EXPECT_EQ(&Flag(f.id), &f);
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    // Each spelling names one flag; the long name may repeat the spelling.
    std::set<std::string> own = {f.spelling, f.long_name};
    if (f.bench_spelling != nullptr) own.insert(f.bench_spelling);
    for (const char* a : f.aliases) own.insert(a);
    for (const auto& s : own) {
      EXPECT_TRUE(spellings.insert(s).second) << s;
      EXPECT_EQ(FindFlag(s), &f) << s;
    }
    if (f.env != nullptr) {
      EXPECT_TRUE(envs.insert(f.env).second) << f.env;
      EXPECT_EQ(FindFlagByEnv(f.env), &f);
    }
    EXPECT_EQ(FindFlagByKey(f.key), &f);
    EXPECT_NE(f.tools, 0) << f.spelling;
  }
  // The last id is in the table too.
  EXPECT_EQ(Flags().size(), static_cast<std::size_t>(FlagId::kPromptGen) + 1);
}

TEST(Flags, SpellingsAsLlamaCppDefinesThem) {
  // common/arg.cpp and llama-bench's usage (checked against the installed --help).
  EXPECT_EQ(FindFlag("-ncmoe")->id, FlagId::kNCpuMoe);
  EXPECT_EQ(FindFlag("--gpu-layers")->id, FlagId::kGpuLayers);
  EXPECT_EQ(FindFlag("-cmoe")->id, FlagId::kCpuMoe);
  EXPECT_EQ(FindFlag("--frobnicate"), nullptr);
  const FlagSpec& ncmoe = Flag(FlagId::kNCpuMoe);
  EXPECT_STREQ(ncmoe.SpellingFor(kToolServer), "--n-cpu-moe");
  EXPECT_STREQ(ncmoe.SpellingFor(kToolBench), "-ncmoe");
  EXPECT_STREQ(Flag(FlagId::kKvUnified).env, "LLAMA_ARG_KV_UNIFIED");
  EXPECT_EQ(PresetKey(Flag(FlagId::kKvUnified)), "kv-unified");
  EXPECT_EQ(PresetKey(Flag(FlagId::kGpuLayers)), "n-gpu-layers");
  EXPECT_FALSE(Flag(FlagId::kKvUnified).takes_value());
  EXPECT_EQ(Flag(FlagId::kOverrideTensor).arity, FlagArity::kList);
  // -kvu is llama-server's alone: the fit-params dry run refuses it.
  EXPECT_FALSE(Flag(FlagId::kKvUnified).TakenBy(kToolFitParams));
  EXPECT_TRUE(Flag(FlagId::kCtxSize).TakenBy(kToolFitParams));
  EXPECT_FALSE(Flag(FlagId::kCtxSize).TakenBy(kToolBench));
  // What decides speed or memory is compared; where a server listens is not.
  EXPECT_TRUE(Flag(FlagId::kThreads).shapes);
  EXPECT_FALSE(Flag(FlagId::kPort).shapes);
  EXPECT_FALSE(Flag(FlagId::kApiKey).shapes);
}

TEST(Flags, TextNamesTheSettingAsTheServerIsGivenIt) {
  EXPECT_EQ(FlagText(FlagId::kNCpuMoe, 21), "--n-cpu-moe 21");
  EXPECT_EQ(FlagText(FlagId::kUbatch, 1024), "-ub 1024");
  EXPECT_EQ(FlagText(FlagId::kCacheTypeK, "q8_0"), "-ctk q8_0");
  EXPECT_EQ(FlagText(FlagId::kKvUnified, ""), "-kvu");
}

}  // namespace
}  // namespace moetune
