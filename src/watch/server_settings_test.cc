#include "watch/server_settings.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(ServerSettingsTest, FoldsAliases) {
  const auto a = SettingsFromArgv({"llama-server", "-m",     "/models/q.gguf",
                                   "-ngl",         "99",     "-ncmoe",
                                   "12",           "-c",     "32768",
                                   "-ub",          "1024",   "-fa",
                                   "on",           "-ot",    "blk\\.11\\.ffn_up_exps=CPU",
                                   "-ot",          "x=CPU",  "--jinja",
                                   "--metrics",    "--port", "8080"});
  const auto b = SettingsFromArgv(
      {"/opt/llama-server", "--model", "/other/q.gguf", "--n-gpu-layers", "99", "--n-cpu-moe", "12",
       "--ctx-size", "32768", "--ubatch-size", "1024", "--flash-attn", "on", "--override-tensor",
       "blk\\.11\\.ffn_up_exps=CPU", "--override-tensor", "x=CPU"});
  EXPECT_EQ(a.NCpuMoe(), 12);
  EXPECT_EQ(a.NUbatch(), 1024);
  EXPECT_EQ(a.config.placement.OverrideTensor(), "blk\\.11\\.ffn_up_exps=CPU,x=CPU");
  // Same model file name in another folder, host/port/metrics ignored.
  EXPECT_TRUE(CompareSettings(a, b).empty());
}

TEST(ServerSettingsTest, ReadsALoaderCommandLine) {
  // /proc/PID/cmdline of a server started through the engine's private loader.
  const auto s = SettingsFromArgv({"/e/ld-linux-x86-64.so.2", "--library-path", "/e/lib",
                                   "/e/usr/bin/llama-server", "-m", "m.gguf", "-t", "4"});
  EXPECT_EQ(s.program, "/e/usr/bin/llama-server");
  EXPECT_EQ(s.launcher,
            (std::vector<std::string>{"/e/ld-linux-x86-64.so.2", "--library-path", "/e/lib"}));
  // The command to run again keeps the loader: the binary alone would not start.
  EXPECT_EQ(WithNCpuMoe(s, 2).front(), "/e/ld-linux-x86-64.so.2");
  EXPECT_EQ(s.Command().size(), 8u);
  EXPECT_EQ(s.config.threads, 4);
  EXPECT_FALSE(s.NCpuMoe().has_value());
  EXPECT_EQ(s.NUbatch(), 512);
}

TEST(ServerSettingsTest, DifferencesThatMatter) {
  const auto tuned = SettingsFromArgv(
      {"llama-server", "-m", "m.gguf", "--n-cpu-moe", "12", "-c", "32768", "-fa", "on"});
  auto running = SettingsFromArgv({"llama-server", "-m", "m.gguf", "--n-cpu-moe", "10", "-c",
                                   "65536", "-fa", "on", "--port", "1234", "-t", "8"});
  const auto d = CompareSettings(tuned, running);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].key, "ctx_size");
  EXPECT_EQ(d[1].key, "n_cpu_moe");
  EXPECT_EQ(d[1].expected, "12");
  EXPECT_EQ(d[1].actual, "10");
  EXPECT_EQ(d[2].key, "threads");
  EXPECT_EQ(d[2].expected, "(default)");
}

TEST(ServerSettingsTest, LoadModeIsComparedUnderEitherSpelling) {
  const auto tuned = SettingsFromArgv({"llama-server", "-m", "m.gguf", "-lm", "none"});
  EXPECT_TRUE(CompareSettings(
                  tuned, SettingsFromArgv({"llama-server", "-m", "m.gguf", "--load-mode", "none"}))
                  .empty());
  const auto d = CompareSettings(tuned, SettingsFromArgv({"llama-server", "-m", "m.gguf"}));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "load_mode");
  EXPECT_EQ(d[0].expected, "none");
}

TEST(ServerSettingsTest, EnvironmentAppliesOnlyWithoutTheFlag) {
  auto s = SettingsFromArgv({"llama-server", "-m", "m.gguf", "-c", "4096"});
  ApplyLlamaEnv({{"LLAMA_ARG_CTX_SIZE", "8192"}, {"LLAMA_ARG_N_CPU_MOE", "7"}, {"OTHER", "1"}}, &s);
  EXPECT_EQ(s.config.ctx_size, 4096);
  EXPECT_EQ(s.NCpuMoe(), 7);
}

TEST(ServerSettingsTest, OldBooleanFlashAttentionAndCpuMoe) {
  const auto s = SettingsFromArgv({"llama-server", "-fa", "-m", "m.gguf", "--cpu-moe"});
  EXPECT_EQ(s.config.flash_attn, FlashAttn::kOn);
  EXPECT_EQ(s.config.model, "m.gguf");
  EXPECT_TRUE(s.all_cpu_moe());
  EXPECT_FALSE(s.NCpuMoe().has_value());
}

TEST(ServerSettingsTest, OneValueInAnySpellingIsNoDifference) {
  // -fa 1 is -fa on; an explicit f16 cache and -ub 512 are llama.cpp's defaults.
  const auto tuned =
      SettingsFromArgv({"llama-server", "-m", "m.gguf", "--n-cpu-moe", "12", "-fa", "on"});
  const auto running = SettingsFromArgv(
      {"llama-server", "-m", "m.gguf", "-ncmoe", "12", "-fa", "1", "-ctk", "f16", "-ub", "512"});
  EXPECT_TRUE(CompareSettings(tuned, running).empty());
  // What the vocabulary knows but a configuration does not hold is compared as given.
  const auto split = SettingsFromArgv(
      {"llama-server", "-m", "m.gguf", "--n-cpu-moe", "12", "-fa", "on", "-ts", "3,1"});
  const auto d = CompareSettings(tuned, split);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "tensor_split");
  EXPECT_EQ(d[0].expected, "(default)");
  EXPECT_EQ(d[0].actual, "3,1");
  EXPECT_EQ(SettingFlagName(d[0].key), "-ts");
}

TEST(ServerSettingsTest, TheFixChangesOnlyNCpuMoe) {
  const auto s = SettingsFromArgv({"llama-server", "-m", "m.gguf", "-ncmoe", "12", "-c", "100"});
  EXPECT_EQ(WithNCpuMoe(s, 14), (std::vector<std::string>{"llama-server", "-m", "m.gguf", "-ncmoe",
                                                          "14", "-c", "100"}));
  const auto none = SettingsFromArgv({"llama-server", "-m", "m.gguf", "--cpu-moe"});
  EXPECT_EQ(WithNCpuMoe(none, 3),
            (std::vector<std::string>{"llama-server", "-m", "m.gguf", "--n-cpu-moe", "3"}));
}

}  // namespace
}  // namespace moetune
