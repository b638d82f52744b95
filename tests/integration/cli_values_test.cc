// Integration: values that must be refused on the command line (issue 8's
// class 6). Every one is a bad command line: exit 2, before any work, with a
// message that names the option and the accepted values or range. One table
// per command; serve and watch have theirs in serve_test.cc and watch_test.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support.h"

namespace moetune::itest {
namespace {

struct Case {
  std::vector<std::string> args;  // after `moetune COMMAND`
  std::string needle;             // expected in stderr
};

// The model need not exist: the values are checked while the command line is
// read, before any file is opened.
const std::string kModel = "/nonexistent/model.gguf";

void ExpectUsageErrors(const std::string& command, const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    std::vector<std::string> argv = {MoetuneBinary(), command};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    std::string shown = "moetune " + command;
    for (const auto& a : c.args) shown.append(" ").append(a);
    SCOPED_TRACE(shown);
    const auto r = RunCommand(argv, 60);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos)
        << "expected '" << c.needle << "' in: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out.substr(0, 300);
  }
}

TEST(CliValuesTest, Bench) {
  ExpectUsageErrors(
      "bench",
      {
          {{kModel, "--timeout", "0"}, "--timeout: 0 s is outside the accepted range 1 to 604800"},
          {{kModel, "--timeout", "-200"}, "--timeout: -200 s is outside the accepted range"},
          {{kModel, "--timeout", "1e10"}, "--timeout: 1e10 s is outside the accepted range"},
          {{kModel, "--timeout", "soon"}, "--timeout: 'soon' is not a number of seconds"},
          {{kModel, "-r", "0"}, "--repetitions: 0 is outside the accepted range 1 to 1000"},
          {{kModel, "--ub", "0"}, "--ub: 0 in '0' is outside the accepted range 1 to"},
          {{kModel, "-b", "512,0"}, "--batch: 0 in '512,0' is outside the accepted range 1 to"},
          {{kModel, "-t", "0"}, "--threads: 0 in '0' is outside the accepted range 1 to 4096"},
          {{kModel, "-t", "9999999999"}, "--threads: '9999999999' in '9999999999' is too large"},
          {{kModel, "--ngl", "4294967297"}, "--ngl: '4294967297' in '4294967297' is too large"},
          {{kModel, "--ncmoe", "-1"}, "--ncmoe: -1 in '-1' is outside the accepted range 0"},
          {{kModel, "-p", "-5"}, "--n-prompt: -5 in '-5' is outside the accepted range 0"},
          {{kModel, "--fa", "ON"}, "--fa: flash attention 'ON' is not on, off or auto"},
          {{kModel, "--fa", "on,bogus"}, "--fa: flash attention 'bogus'"},
          {{kModel, "--ctk", "q3_k"}, "--ctk: 'q3_k' is not a KV cache type"},
          {{kModel, "--ctv", "f16,Q8_0"}, "--ctv: 'Q8_0' is not a KV cache type"},
          {{kModel, "--engine", "sim", "--vram", "12XiB"}, "--vram: cannot read size '12XiB'"},
          {{kModel, "--engine", "sim", "--vram-used", "-1GiB"}, "--vram-used: cannot read size"},
          {{kModel, "--wait-quiet=-5"}, "--wait-quiet"},
          {{kModel, "--wait-quiet=soon"}, "--wait-quiet"},
          {{kModel, "--engine", "sim", "--gpu-bw", "fast"}, "--gpu-bw: bad bandwidth 'fast'"},
          {{kModel, "--engine", "sim", "--cpu", "0c8t"}, "--cpu: bad --cpu '0c8t'"},
          {{kModel, "--engine", "sim", "--machine", "nope"}, "--machine"},
          {{kModel, "--engine", "sim", "--spill", "maybe"}, "--spill"},
      });
}

TEST(CliValuesTest, Demo) {
  ExpectUsageErrors("demo", {
                                {{"-r", "0"}, "--repetitions: 0 is outside the accepted range 1"},
                                {{"-r", "x"}, "--repetitions: 'x' is not a whole number"},
                                {{"--preset", "nope"}, "--preset: unknown preset 'nope'"},
                            });
}

TEST(CliValuesTest, Plan) {
  ExpectUsageErrors(
      "plan",
      {
          {{kModel, "--ctx", "0"}, "--ctx: cannot read token count '0'"},
          {{kModel, "--ctx", "32Q"}, "--ctx: cannot read token count '32Q': unknown unit"},
          {{kModel, "--ubatch", "0"}, "--ubatch: 0 is outside the accepted range 1 to"},
          {{kModel, "--batch", "0"}, "--batch: 0 is outside the accepted range 1 to"},
          {{kModel, "--parallel", "0"}, "--parallel: 0 is outside the accepted range 1 to 256"},
          {{kModel, "--parallel", "300"}, "--parallel: 300 is outside the accepted range 1 to 256"},
          {{kModel, "--vram", "12XiB"}, "--vram: cannot read size '12XiB': unknown unit 'xib'"},
          {{kModel, "--vram", "twelve"}, "--vram: cannot read size 'twelve'"},
          {{kModel, "--reserve", "-1GiB"}, "--reserve: cannot read size '-1GiB'"},
          {{kModel, "--vram-used", "lots"}, "--vram-used: cannot read size 'lots'"},
          {{kModel, "--margin", "lots"}, "--margin: cannot read size 'lots'"},
          {{kModel, "--host-ram", "2PiB"}, "--host-ram"},
          {{kModel, "--fa", "ON"}, "--fa: ON not in {on,off}"},
          {{kModel, "--fa", "bogus"}, "--fa: bogus not in {on,off}"},
          {{kModel, "--ctk", "q3_k"}, "--ctk: 'q3_k' is not a KV cache type llama.cpp accepts"},
          {{kModel, "--ctv", "f8"}, "--ctv: 'f8' is not a KV cache type"},
          {{kModel, "-t", "0"}, "--threads: 0 is outside the accepted range 1 to 4096"},
          {{kModel, "--machine", "nope"}, "--machine"},
          {{kModel, "--ram-bw", "-3GB/s"}, "--ram-bw: bad bandwidth '-3GB/s'"},
          {{kModel, "--cpu", "0c8t"}, "--cpu: bad --cpu '0c8t'"},
      });
}

TEST(CliValuesTest, Doctor) {
  ExpectUsageErrors("doctor", {
                                  {{"--model", kModel, "--ctx", "0"}, "--ctx: cannot read token"},
                                  {{"--ctx", "8K"}, "--ctx requires --model"},
                              });
}

TEST(CliValuesTest, Synth) {
  ExpectUsageErrors(
      "synth",
      {
          {{"--preset", "qwen3moe", "--layers", "0", "-o", "x.gguf"},
           "--layers: 0 is outside the accepted range 1 to 100000"},
          {{"--preset", "qwen3moe", "--layers", "-3", "-o", "x.gguf"},
           "--layers: -3 is outside the accepted range 1 to 100000"},
          {{"--preset", "qwen3moe", "--layers", "100001", "-o", "x.gguf"},
           "--layers: 100001 is outside the accepted range 1 to 100000"},
          {{"--preset", "qwen3moe", "--ctx-train", "0", "-o", "x.gguf"},
           "--ctx-train: 0 is outside the accepted range 1 to 4294967295"},
          {{"--preset", "qwen3moe", "--ctx-train", "4294967296", "-o", "x.gguf"},
           "--ctx-train: 4294967296 is outside the accepted range 1 to 4294967295"},
          {{"--preset", "qwen3moe", "--scale", "2", "-o", "x.gguf"}, "--scale: bad --scale '2'"},
          {{"--preset", "qwen3moe", "--quant", "q3", "-o", "x.gguf"}, "--quant: unknown --quant"},
          {{"--preset", "nope", "-o", "x.gguf"}, "--preset: unknown preset 'nope'"},
          {{"--preset", "qwen3moe", "--config", "c.json", "-o", "x.gguf"}, "excludes"},
          {{"-o", "x.gguf"}, "give exactly one of --preset NAME or --config"},
          {{"--preset", "qwen3moe"}, "missing -o OUT.gguf"},
      });
}

TEST(CliValuesTest, InspectAndCalibrate) {
  ExpectUsageErrors("inspect", {{{kModel, "--ctx", "4K,0"}, "--ctx: cannot read token count '0'"}});
  ExpectUsageErrors(
      "calibrate",
      {
          {{kModel, "-r", "0"}, "--repetitions: 0 is outside the accepted range 1 to 50"},
          {{kModel, "--depth", "1"}, "--depth: 1 is outside the accepted range 64 to"},
          {{kModel, "--deep-depth", "-2"}, "--deep-depth: -2 is outside the accepted range -1 to"},
          {{kModel, "--stat", "worst"}, "--stat"},
          {{kModel, "--vram", "12XiB"}, "--vram: cannot read size '12XiB'"},
      });
}

// Shapes in a config.json that `synth --config` must refuse (a failed command,
// exit 1, naming the problem), and the config itself is never overwritten.
TEST(CliValuesTest, SynthConfigShapes) {
  TempDir dir;
  const std::string base = R"("model_type": "qwen3_moe", "num_hidden_layers": 4,
      "hidden_size": 256, "moe_intermediate_size": 256, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024)";
  struct ConfigCase {
    std::string json;
    std::string needle;
  };
  const std::vector<ConfigCase> cases = {
      {"{" + base + R"(, "num_experts": 0, "num_experts_per_tok": 1})", "0 experts"},
      {"{" + base + R"(, "num_experts": 4, "num_experts_per_tok": 8})", "8 used of 4 experts"},
      {"{" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
          "max_position_embeddings": -1})",
       "max_position_embeddings"},
      {"{" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
          "first_k_dense_replace": -2})",
       "first_k_dense_replace"},
      {"{" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2,
          "head_dim": 4611686018427387904})",
       "head size"},
      {R"({"model_type": "qwen3_next", "num_hidden_layers": 4, "hidden_size": 256,
          "moe_intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 64, "vocab_size": 1024, "num_experts": 4, "num_experts_per_tok": 2,
          "shared_expert_intermediate_size": 256, "full_attention_interval": 0,
          "linear_conv_kernel_dim": 4, "linear_key_head_dim": 64, "linear_num_key_heads": 2,
          "linear_num_value_heads": 4})",
       "full-attention interval"},
      // Found by hf_config_fuzz: no shared expert width divided by zero (SIGFPE).
      {R"({"model_type": "qwen3_next", "num_hidden_layers": 4, "hidden_size": 256,
          "moe_intermediate_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 64, "vocab_size": 1024, "num_experts": 4, "num_experts_per_tok": 2,
          "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 64,
          "linear_num_key_heads": 2, "linear_num_value_heads": 4})",
       "shared expert"},
  };
  int i = 0;
  for (const auto& c : cases) {
    const std::string path = dir.File("config" + std::to_string(i++) + ".json");
    std::ofstream(path) << c.json;
    SCOPED_TRACE(c.json);
    const auto r =
        RunCommand({MoetuneBinary(), "synth", "--config", path, "-o", dir.File("m.gguf")}, 60);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos)
        << "expected '" << c.needle << "' in " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.File("m.gguf")));
  }
  // A good config written onto itself: refused, the config unchanged.
  const std::string good = dir.File("good.json");
  const std::string text = "{" + base + R"(, "num_experts": 4, "num_experts_per_tok": 2})";
  std::ofstream(good) << text;
  const auto self = RunCommand({MoetuneBinary(), "synth", "--config", good, "-o", good}, 60);
  EXPECT_EQ(self.exit_code, 1) << self.err;
  EXPECT_NE(self.err.find("input"), std::string::npos) << self.err;
  std::ifstream in(good);
  const std::string after((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(after, text);
  const auto ok =
      RunCommand({MoetuneBinary(), "synth", "--config", good, "-o", dir.File("ok.gguf")}, 60);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

}  // namespace
}  // namespace moetune::itest
