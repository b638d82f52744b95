// Integration: every tensor of a `moetune synth --quant X` file has the type
// the real llama-quantize gives it when it turns the F16 synth file of the same
// shape into file type X (llama.cpp's recipe: model/quant_recipe.h).
//
// The shapes cover every architecture synth writes. Tiny presets have 8
// experts (llama.cpp's 8-expert rules); small config.json shapes add other
// expert counts, a row of 2880 (fallback types) and MLA; an 80-layer llama is
// llama.cpp's "70B" class. Every file type runs on qwen35moe and on the
// config shapes; the other presets run the file types whose rules depend on the
// architecture (q4_k_m, q4_k_s, q6_k, mxfp4). q5_k_m/q5_k_s share q4_k_m/q4_k_s's
// rules, q8_0 and f16 have none. No file type synth offers needs an importance
// matrix (llama.cpp asks for one only for IQ1/IQ2/IQ3_XXS and Q2_K_S).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"
#include "gguf/reader.h"
#include "support.h"

namespace moetune::itest {
namespace {

// Small config.json shapes (written to the test's folder, synthesized at --scale full).
const char* const kQwen3Moe16 = R"({"model_type": "qwen3_moe", "num_hidden_layers": 8,
  "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
  "vocab_size": 1024, "max_position_embeddings": 4096, "num_experts": 16,
  "num_experts_per_tok": 4, "moe_intermediate_size": 256, "intermediate_size": 512})";
const char* const kQwen35Moe32 = R"({"model_type": "qwen3_5_moe_text", "num_hidden_layers": 8,
  "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 128,
  "partial_rotary_factor": 0.25, "vocab_size": 1024, "max_position_embeddings": 4096,
  "num_experts": 32, "num_experts_per_tok": 4, "moe_intermediate_size": 256,
  "shared_expert_intermediate_size": 256, "full_attention_interval": 4,
  "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
  "linear_num_key_heads": 2, "linear_num_value_heads": 4})";
const char* const kDeepseek16 = R"({"model_type": "deepseek_v3", "num_hidden_layers": 8,
  "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1024,
  "max_position_embeddings": 4096, "n_routed_experts": 16, "num_experts_per_tok": 4,
  "moe_intermediate_size": 256, "intermediate_size": 512, "n_shared_experts": 1,
  "first_k_dense_replace": 1, "q_lora_rank": 256, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
  "qk_nope_head_dim": 128, "v_head_dim": 128})";
const char* const kGptOss2880 = R"({"model_type": "gpt_oss", "num_hidden_layers": 8,
  "hidden_size": 2880, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64,
  "vocab_size": 1024, "max_position_embeddings": 4096, "num_local_experts": 4,
  "num_experts_per_tok": 2, "intermediate_size": 64, "sliding_window": 128})";

const std::vector<std::string> kAllQuants = {"q4_k_m", "q4_k_s", "q5_k_m", "q5_k_s",
                                             "q6_k",   "q8_0",   "mxfp4",  "f16"};
const std::vector<std::string> kArchQuants = {"q4_k_m", "q4_k_s", "q6_k", "mxfp4"};

// The name llama-quantize takes for a synth --quant.
std::string FtypeName(const std::string& quant) {
  static const std::map<std::string, std::string> kNames = {
      {"q4_k_m", "Q4_K_M"}, {"q4_k_s", "Q4_K_S"}, {"q5_k_m", "Q5_K_M"},   {"q5_k_s", "Q5_K_S"},
      {"q6_k", "Q6_K"},     {"q8_0", "Q8_0"},     {"mxfp4", "MXFP4_MOE"}, {"f16", "F16"}};
  return kNames.at(quant);
}

struct Shape {
  std::string name;
  std::string preset;  // a preset at --scale tiny, or
  std::string config;  // a config.json at --scale full
  int layers = 0;      // --layers override (0: none)
  std::vector<std::string> quants;
};

std::vector<Shape> Shapes() {
  std::vector<Shape> s;
  s.push_back({"qwen35moe", "qwen35moe", "", 0, kAllQuants});
  for (const char* p : {"qwen3moe", "qwen3next", "gpt-oss-20b", "glm4moe", "deepseek2", "mixtral",
                        "llama4", "llama", "qwen2", "qwen3"}) {
    s.push_back({p, p, "", 0, kArchQuants});
  }
  s.push_back({"qwen3moe_16_experts", "", kQwen3Moe16, 0, kAllQuants});
  s.push_back({"qwen35moe_32_experts", "", kQwen35Moe32, 0, kAllQuants});
  s.push_back({"deepseek2_16_experts", "", kDeepseek16, 0, kAllQuants});
  s.push_back({"gpt_oss_rows_of_2880", "", kGptOss2880, 0, kAllQuants});
  s.push_back({"llama_80_layers", "llama", "", 80, {"q4_k_m", "q4_k_s"}});
  return s;
}

// gtest prints the parameter in failure messages and test lists: its name, not its bytes.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

class SynthVsLlamaQuantizeTest : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    const auto engine = EngineDir();
    ASSERT_TRUE(engine.has_value())
        << "llama.cpp not found: run scripts/setup-engine.sh or set MOETUNE_LLAMA_DIR";
    quantize_ = (*engine / "llama-quantize").string();
    ASSERT_TRUE(std::filesystem::exists(quantize_))
        << "no llama-quantize next to the engine's llama-bench in " << engine->string();
  }

  // `moetune synth` of the shape at `quant`; "" on failure (reported).
  std::string Synth(const std::string& quant) {
    const Shape& s = GetParam();
    std::vector<std::string> argv = {MoetuneBinary(), "synth"};
    if (!s.preset.empty()) {
      argv.insert(argv.end(), {"--preset", s.preset, "--scale", "tiny"});
    } else {
      const std::string config = dir_.File("config.json");
      std::ofstream(config) << s.config;
      argv.insert(argv.end(), {"--config", config, "--scale", "full"});
    }
    if (s.layers > 0) argv.insert(argv.end(), {"--layers", std::to_string(s.layers)});
    const std::string out = dir_.File(quant + ".synth.gguf");
    argv.insert(argv.end(), {"--quant", quant, "-o", out});
    const auto r = RunCommand(argv, 300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? out : "";
  }

  std::string quantize_;
  TempDir dir_;
};

std::map<std::string, uint32_t> TypesByName(const GgufFile& f) {
  std::map<std::string, uint32_t> out;
  for (const auto& t : f.tensors) out[t.name] = t.type;
  return out;
}

TEST_P(SynthVsLlamaQuantizeTest, SynthGivesEveryTensorTheTypeLlamaQuantizeGivesIt) {
  const std::string source = Synth("f16");
  ASSERT_FALSE(source.empty());
  for (const std::string& quant : GetParam().quants) {
    SCOPED_TRACE(quant);
    const std::string ours = Synth(quant);
    ASSERT_FALSE(ours.empty());
    const std::string theirs = dir_.File(quant + ".llama-quantize.gguf");
    const auto q = RunCommand({quantize_, source, theirs, FtypeName(quant), "2"}, 600);
    ASSERT_EQ(q.exit_code, 0) << "llama-quantize " << FtypeName(quant) << " failed:\n"
                              << q.err.substr(q.err.size() > 3000 ? q.err.size() - 3000 : 0);
    const auto a = ReadGgufFile(ours);
    const auto b = ReadGgufFile(theirs);
    ASSERT_TRUE(a.ok()) << a.error().message();
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_EQ(a->metadata.GetUint("general.file_type"), b->metadata.GetUint("general.file_type"));
    const auto mine = TypesByName(*a);
    const auto ref = TypesByName(*b);
    ASSERT_EQ(mine.size(), ref.size());
    int differ = 0;
    for (const auto& [name, type] : ref) {
      const auto it = mine.find(name);
      ASSERT_NE(it, mine.end()) << name << " is missing from synth's file";
      if (it->second != type) {
        ADD_FAILURE() << name << ": synth " << GgmlTypeName(it->second) << ", llama-quantize "
                      << GgmlTypeName(type);
        if (++differ >= 20) break;  // enough to see the pattern
      }
    }
    // The tensor data sizes follow from the types: the same bytes in both files.
    uint64_t bytes_a = 0, bytes_b = 0;
    for (const auto& t : a->tensors) bytes_a += t.n_bytes;
    for (const auto& t : b->tensors) bytes_b += t.n_bytes;
    EXPECT_EQ(bytes_a, bytes_b);
    std::filesystem::remove(ours);
    std::filesystem::remove(theirs);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SynthVsLlamaQuantizeTest, ::testing::ValuesIn(Shapes()),
                         [](const auto& param_info) {
                           std::string n = param_info.param.name;
                           for (auto& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

}  // namespace
}  // namespace moetune::itest
