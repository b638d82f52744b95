#include "config/server_argv.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace moetune {
namespace {

// Every field set, and none at its "not given" value.
ServerConfig Full() {
  ServerConfig c;
  c.model = "/models/my model.gguf";
  c.placement.n_gpu_layers = 99;
  c.placement.n_cpu_moe = 7;
  c.placement.fine_fill = {{6, {"ffn_down_exps", "ffn_up_exps"}}};
  c.placement.overrides = {{"token_embd", "CPU"}};
  c.ctx_size = 32768;
  c.n_parallel = 4;
  c.kv_unified = Switch::kOn;
  c.n_ubatch = 1024;
  c.n_batch = 4096;
  c.flash_attn = FlashAttn::kOn;
  c.type_k = ggml_type::kQ8_0;
  c.type_v = ggml_type::kQ8_0;
  c.threads = 6;
  c.load_mode = LoadMode::kNone;
  c.fit = Switch::kOff;
  c.rpc = {"10.0.0.2:50052", "10.0.0.3:50052"};
  c.host = "127.0.0.1";
  c.port = 8080;
  c.metrics = true;
  return c;
}

TEST(ServerArgv, WritesEverySettingInTheVocabularysOrder) {
  // --rpc right after the model: llama.cpp resolves -dev and -ot buffer names
  // while it reads them, and RPC devices exist once --rpc has been read.
  EXPECT_EQ(ShellJoin(ServerArgv(Full())),
            "llama-server -m '/models/my model.gguf' --rpc 10.0.0.2:50052,10.0.0.3:50052 -ngl 99 "
            "--n-cpu-moe 7 -ot "
            "'blk\\.6\\.(ffn_down_exps|ffn_up_exps)=CPU,token_embd=CPU' -c 32768 -np 4 -kvu "
            "-ub 1024 -b 4096 -fa on -ctk q8_0 -ctv q8_0 -t 6 -fit off -lm none "
            "--host 127.0.0.1 --port 8080 --metrics");
  // What is not given is not written; -ub and -b always are.
  EXPECT_EQ(ServerArgv(UnsetServerConfig()),
            (std::vector<std::string>{"llama-server", "-ub", "512", "-b", "2048"}));
}

TEST(ServerArgv, ParsesBackToTheSameConfiguration) {
  const ServerConfig c = Full();
  const ParsedServerCommand p = ParseServerArgv(ServerArgv(c));
  EXPECT_EQ(p.config, c);
  EXPECT_TRUE(p.other.empty());
  EXPECT_TRUE(p.invalid.empty());
  EXPECT_TRUE(p.not_understood.empty());
  EXPECT_EQ(p.program, "llama-server");
  // A dense plan writes no --n-cpu-moe, a CPU-only one -fa off and -no-kvu.
  ServerConfig dense = c;
  dense.placement = {};
  dense.placement.n_gpu_layers = 12;
  dense.placement.n_cpu_moe = -1;
  dense.kv_unified = Switch::kOff;
  dense.flash_attn = FlashAttn::kOff;
  dense.load_mode = LoadMode::kDefault;
  dense.rpc.clear();
  const auto argv = ServerArgv(dense);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--n-cpu-moe"), 0);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "-no-kvu"), 1);
  EXPECT_EQ(ParseServerArgv(argv).config, dense);
}

TEST(ServerArgv, ASplitAcrossDevicesReadsBack) {
  ServerConfig c = Full();
  c.placement.devices = {{"CUDA0", 30}, {"RPC[10.0.0.2:50052]", 18}};
  const auto argv = ServerArgv(c);
  const auto dev = std::find(argv.begin(), argv.end(), "-dev");
  const auto ts = std::find(argv.begin(), argv.end(), "-ts");
  ASSERT_NE(dev, argv.end());
  ASSERT_NE(ts, argv.end());
  EXPECT_EQ(*(dev + 1), "CUDA0,RPC[10.0.0.2:50052]");
  EXPECT_EQ(*(ts + 1), "30,18");  // -ts as whole layer counts
  const ParsedServerCommand p = ParseServerArgv(argv);
  EXPECT_EQ(p.config, c);
  EXPECT_TRUE(p.other.empty());
  // Proportions that are not whole layer counts stay as given.
  const auto q = ParseServerArgv({"llama-server", "-dev", "CUDA0,CUDA1", "-ts", "0.6,0.4"});
  EXPECT_TRUE(q.config.placement.devices.empty());
  EXPECT_EQ(q.other.size(), 2u);
}

TEST(ServerArgv, ExpertsOfTheLastLayersAreOneRule) {
  ServerConfig c;
  c.model = "m.gguf";
  c.placement.cpu_experts = CpuExpertsFrom::kLast;
  c.placement.n_cpu_moe = 3;
  c.placement.n_layer = 10;
  const auto argv = ServerArgv(c);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--n-cpu-moe"), 0);
  const auto ot = std::find(argv.begin(), argv.end(), "-ot");
  ASSERT_NE(ot, argv.end());
  EXPECT_EQ(*(ot + 1), "blk\\.(7|8|9)\\.ffn_(up|down|gate|gate_up)_(ch|)exps=CPU");
}

TEST(ServerArgv, ReadsAliasesLoadersAndWhatItDoesNotHold) {
  const ParsedServerCommand p = ParseServerArgv({"/e/ld-linux-x86-64.so.2",
                                                 "--library-path",
                                                 "/e/lib",
                                                 "/e/bin/llama-server",
                                                 "--model",
                                                 "q.gguf",
                                                 "-ncmoe",
                                                 "12",
                                                 "--ctx-size",
                                                 "8192",
                                                 "-fa",
                                                 "1",
                                                 "--cache-type-k",
                                                 "Q8_0",
                                                 "-tb",
                                                 "8",
                                                 "--jinja",
                                                 "--api-key",
                                                 "k",
                                                 "-ngl",
                                                 "lots",
                                                 "-ctv",
                                                 "q9_z",
                                                 "--frob",
                                                 "3"});
  EXPECT_EQ(p.program, "/e/bin/llama-server");
  EXPECT_EQ(p.launcher.size(), 3u);
  EXPECT_EQ(p.config.model, "q.gguf");
  EXPECT_EQ(p.config.placement.n_cpu_moe, 12);
  EXPECT_EQ(p.config.ctx_size, 8192);
  EXPECT_EQ(p.config.flash_attn, FlashAttn::kOn);
  EXPECT_EQ(p.config.type_k, ggml_type::kQ8_0);
  EXPECT_EQ(p.config.placement.n_gpu_layers, -1);  // "lots" is not a value
  EXPECT_EQ(p.other,
            (std::vector<FlagSetting>{{FlagId::kThreadsBatch, "8"}, {FlagId::kApiKey, "k"}}));
  EXPECT_EQ(p.invalid, (std::vector<FlagSetting>{{FlagId::kGpuLayers, "lots"},
                                                 {FlagId::kCacheTypeV, "q9_z"}}));
  EXPECT_EQ(p.not_understood, (std::vector<std::string>{"--jinja", "--frob", "3"}));
  EXPECT_TRUE(p.Given(FlagId::kNCpuMoe));
  EXPECT_FALSE(p.Given(FlagId::kThreads));
  EXPECT_EQ(*p.Other(FlagId::kApiKey), "k");
}

TEST(ServerArgv, OldBooleanFlashAttentionAndRepeatedOverrides) {
  const auto p = ParseServerArgv({"llama-server", "-fa", "-m", "m.gguf", "-ot",
                                  "blk\\.3\\.(ffn_up_exps)=CPU", "-ot", "x=CUDA0"});
  EXPECT_EQ(p.config.flash_attn, FlashAttn::kOn);
  ASSERT_EQ(p.config.placement.fine_fill.size(), 1u);
  EXPECT_EQ(p.config.placement.fine_fill[0].layer, 3);
  EXPECT_EQ(p.config.placement.overrides, (std::vector<OverrideRule>{{"x", "CUDA0"}}));
  EXPECT_EQ(p.config.placement.OverrideTensor(), "blk\\.3\\.(ffn_up_exps)=CPU,x=CUDA0");
  // A rule before the fine fill's form keeps the order: everything stays as given.
  const auto q = ParseServerArgv({"llama-server", "-ot", "x=CUDA0,blk\\.3\\.(ffn_up_exps)=CPU"});
  EXPECT_TRUE(q.config.placement.fine_fill.empty());
  EXPECT_EQ(q.config.placement.OverrideTensor(), "x=CUDA0,blk\\.3\\.(ffn_up_exps)=CPU");
}

TEST(ServerArgv, EnvironmentAppliesOnlyWithoutTheFlag) {
  auto p = ParseServerArgv({"llama-server", "-m", "m.gguf", "-c", "4096"});
  ApplyLlamaEnv({{"LLAMA_ARG_CTX_SIZE", "8192"},
                 {"LLAMA_ARG_N_CPU_MOE", "7"},
                 {"LLAMA_ARG_KV_UNIFIED", "false"},
                 {"LLAMA_ARG_FLASH_ATTN", "maybe"},
                 {"OTHER", "1"}},
                &p);
  EXPECT_EQ(p.config.ctx_size, 4096);
  EXPECT_EQ(p.config.placement.n_cpu_moe, 7);
  EXPECT_EQ(p.config.kv_unified, Switch::kOff);
  EXPECT_EQ(p.invalid, (std::vector<FlagSetting>{{FlagId::kFlashAttn, "maybe"}}));
}

TEST(ServerArgv, PlacementSettingsAreTheCommandsOwn) {
  const ServerConfig c = Full();
  const auto words = SettingsArgv(PlacementSettings(c.placement));
  const auto argv = ServerArgv(c);
  ASSERT_EQ(words.size(), 6u);
  EXPECT_TRUE(std::equal(words.begin(), words.end(), argv.begin() + 5));  // after -m and --rpc
  EXPECT_EQ(SettingsArgv(PlacementSettings(c.placement), kToolBench)[2], "-ncmoe");
}

TEST(ShellJoin, QuotesWhatTheShellWouldSplit) {
  EXPECT_EQ(ShellJoin({"a", "b c", "it's", ""}), "a 'b c' 'it'\\''s' ''");
  EXPECT_EQ(ShellJoin({"blk\\.3\\.ffn=CPU"}), "'blk\\.3\\.ffn=CPU'");
}

TEST(ContextOf, TheEnginesDefaultsStandForWhatIsNotGiven) {
  ServerConfig c = UnsetServerConfig();
  const ContextParams x = ContextOf(c, ReserveOutputs::kPerSequence, 40960);
  EXPECT_EQ(x.n_ctx, 40960);
  EXPECT_EQ(x.n_seq, 4);  // -np auto: 4 slots sharing one cache
  EXPECT_TRUE(x.kv_unified);
  EXPECT_TRUE(x.flash_attn);
  const ServerConfig f = Full();
  const ContextParams y = ContextOf(f, ReserveOutputs::kAllTokens);
  EXPECT_EQ(y.n_ctx, 32768);
  EXPECT_EQ(y.n_seq, 4);
  EXPECT_TRUE(y.kv_unified);
  EXPECT_EQ(y.n_ubatch, 1024);
  EXPECT_EQ(y.type_k, ggml_type::kQ8_0);
  EXPECT_EQ(y.reserve_outputs, ReserveOutputs::kAllTokens);
  // Other -ot rules are placed by their pattern; a buffer no device has is refused.
  auto all = WeightPlacementOf(f, true);
  ASSERT_TRUE(all.ok()) << all.error().message();
  ASSERT_EQ(all->rules().size(), 1u);
  EXPECT_EQ(all->rules()[0].device, kHostDevice);
  ServerConfig bad = f;
  bad.placement.overrides = {{"token_embd", "CUDA7"}};
  auto refused = WeightPlacementOf(bad, true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("CUDA7"), std::string::npos);
  ServerConfig g = f;
  g.placement.overrides.clear();
  auto w = WeightPlacementOf(g, true);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->n_cpu_moe, 7);
  EXPECT_EQ(w->override_layer, 6);
}

TEST(PlannedConfig, CarriesThePlansPlacementAndContext) {
  WeightPlacement p;
  p.has_device = true;
  p.n_gpu_layers = 99;
  p.n_cpu_moe = 7;
  p.override_layer = 6;
  p.override_kinds = {"ffn_down_exps"};
  ContextParams ctx;
  ctx.n_ctx = 32768;
  ctx.n_seq = 4;
  ctx.kv_unified = true;
  ctx.n_ubatch = 1024;
  ctx.n_batch = 4096;
  ctx.type_k = ggml_type::kQ8_0;
  ctx.type_v = ggml_type::kQ8_0;
  EXPECT_EQ(ShellJoin(ServerArgv(PlannedConfig("m.gguf", p, ctx, true))),
            "llama-server -m m.gguf -ngl 99 --n-cpu-moe 7 -ot 'blk\\.6\\.(ffn_down_exps)=CPU' "
            "-c 32768 -np 4 -kvu -ub 1024 -b 4096 -fa on -ctk q8_0 -ctv q8_0 -fit off");
  ctx.n_seq = 1;  // one slot: unified or not is the same cache; -np stays explicit
  const auto one = ServerArgv(PlannedConfig("m.gguf", p, ctx, true));
  EXPECT_EQ(std::count(one.begin(), one.end(), "-kvu"), 0);
  EXPECT_NE(std::find(one.begin(), one.end(), "-np"), one.end());
  const auto dense = ServerArgv(PlannedConfig("m.gguf", p, ctx, false));
  EXPECT_EQ(std::count(dense.begin(), dense.end(), "--n-cpu-moe"), 0);
}

}  // namespace
// Zero slots is no server: "-np 0" is refused, so every accepted slot count
// (-1: llama-server's auto, or 1 and more) writes back and reads back the same.
TEST(ServerArgv, ZeroSlotsIsNotASlotCount) {
  const ParsedServerCommand zero = ParseServerArgv({"llama-server", "-m", "q.gguf", "-np", "0"});
  EXPECT_EQ(zero.invalid, (std::vector<FlagSetting>{{FlagId::kParallel, "0"}}));
  EXPECT_EQ(zero.config.n_parallel, -1);
  for (const char* n : {"-1", "1", "4"}) {
    const ServerConfig c = ParseServerArgv({"llama-server", "-m", "q.gguf", "-np", n}).config;
    EXPECT_EQ(ParseServerArgv(ServerArgv(c)).config, c) << n;
  }
}

}  // namespace moetune
