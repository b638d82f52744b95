#include "model/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf/ggml_type.h"
#include "gguf/reader.h"
#include "model/quantize.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;

class SynthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() /
        ("moetune_synth_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static SynthOptions Tiny(const std::string& preset, SynthQuant q = SynthQuant::kQ8_0) {
    SynthOptions o;
    o.spec = ScaleSynthSpec(*SynthPreset(preset), SynthScale{});
    o.quant = q;
    return o;
  }
  static std::vector<char> Slurp(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  fs::path dir_;
};

TEST_F(SynthTest, FullScaleQwen3MoeQ8_0MatchesThePublishedSize) {
  // Published Qwen3-30B-A3B Q8_0 GGUF: 32.48 GB (shared/docs/models.md). Our
  // tensor data excludes the ~5 MB header (tokenizer), so expect within 1%.
  auto sum = SummarizeSynth(*SynthPreset("qwen3moe"), SynthQuant::kQ8_0);
  ASSERT_TRUE(sum.ok());
  const double gb = static_cast<double>(sum->tensor_bytes) / 1e9;
  EXPECT_NEAR(gb, 32.48, 32.48 * 0.01) << gb;
  // 30.5B parameters.
  EXPECT_NEAR(static_cast<double>(sum->n_params) / 1e9, 30.5, 0.2);
}

TEST_F(SynthTest, FullScaleSizesOfOtherPresetsMatchPublishedFiles) {
  // Published plain llama.cpp recipes (docs/synth.md has the sources), within
  // 1%; the tensor data leaves out the header (tokenizer, a few MB).
  struct Case {
    const char* preset;
    SynthQuant quant;
    double published_gb;
  };
  for (const Case& c :
       {Case{"gpt-oss-20b", SynthQuant::kMxfp4, 12.1}, Case{"qwen35moe", SynthQuant::kQ4_K_M, 21.2},
        Case{"qwen3moe", SynthQuant::kQ6_K, 25.10}, Case{"qwen3moe", SynthQuant::kQ5_K_M, 21.74},
        Case{"deepseek2", SynthQuant::kQ8_0, 713.29},
        Case{"deepseek2", SynthQuant::kQ4_K_M, 404.43},
        Case{"deepseek2", SynthQuant::kQ5_K_S, 461.81}}) {
    auto sum = SummarizeSynth(*SynthPreset(c.preset), c.quant);
    ASSERT_TRUE(sum.ok());
    const double gb = static_cast<double>(sum->tensor_bytes) / 1e9;
    EXPECT_NEAR(gb, c.published_gb, c.published_gb * 0.01)
        << c.preset << " " << SynthQuantName(c.quant);
  }
}

TEST_F(SynthTest, WritesAReadableTinyModel) {
  const auto path = dir_ / "tiny.gguf";
  SynthOptions o = Tiny("qwen3moe");
  auto sum = WriteSynthModel(o, path.string());
  ASSERT_TRUE(sum.ok()) << sum.error().message();
  auto f = ReadGgufFile(path.string());
  ASSERT_TRUE(f.ok()) << f.error().message();
  EXPECT_EQ(f->tensors.size(), sum->n_tensors);
  EXPECT_EQ(f->metadata.GetString("general.architecture"), "qwen3moe");
  EXPECT_EQ(f->metadata.GetUint("qwen3moe.block_count"), 8u);
  EXPECT_EQ(f->metadata.GetUint("qwen3moe.expert_count"), 8u);
  EXPECT_EQ(f->metadata.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f->metadata.Find("tokenizer.ggml.tokens")->array_count,
            static_cast<uint64_t>(o.spec.n_vocab));
  uint64_t bytes = 0;
  for (const auto& t : f->tensors) bytes += t.n_bytes;
  EXPECT_EQ(bytes, sum->tensor_bytes);
  EXPECT_LT(fs::file_size(path), 40u << 20);  // "a few MB to ~30 MB"

  // Weights decode to finite values with the intended spread; norms are 1.
  const auto data = Slurp(path);
  for (const auto& t : f->tensors) {
    if (t.name != "blk.0.attn_q.weight" && t.name != "blk.0.attn_norm.weight") continue;
    const auto info = GgmlTypeById(t.type);
    const size_t n = static_cast<size_t>(t.ne[0]);
    const size_t row = static_cast<size_t>(*GgmlRowBytes(*info, n));
    std::vector<float> y(n);
    const auto* p = reinterpret_cast<const uint8_t*>(data.data() + f->data_offset + t.offset);
    ASSERT_TRUE(DequantizeRow(t.type, std::span<const uint8_t>(p, row), y).ok());
    double sq = 0;
    for (float v : y) {
      ASSERT_TRUE(std::isfinite(v));
      sq += v * v;
    }
    const double rms = std::sqrt(sq / static_cast<double>(n));
    if (t.name == "blk.0.attn_norm.weight") {
      EXPECT_DOUBLE_EQ(rms, 1.0);
    } else {
      EXPECT_NEAR(rms, 0.02, 0.004);
    }
  }
}

TEST_F(SynthTest, SameSeedSameBytesOtherSeedOtherBytes) {
  SynthOptions o = Tiny("gpt-oss-20b", SynthQuant::kQ4_K_M);
  ASSERT_TRUE(WriteSynthModel(o, (dir_ / "a.gguf").string()).ok());
  ASSERT_TRUE(WriteSynthModel(o, (dir_ / "b.gguf").string()).ok());
  o.seed = 7;
  ASSERT_TRUE(WriteSynthModel(o, (dir_ / "c.gguf").string()).ok());
  const auto a = Slurp(dir_ / "a.gguf"), b = Slurp(dir_ / "b.gguf"), c = Slurp(dir_ / "c.gguf");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
}

TEST_F(SynthTest, FailureMidWriteLeavesNoFile) {
  const auto path = dir_ / "out.gguf";
  SynthOptions o = Tiny("qwen35moe");
  int calls = 0;
  o.progress = [&calls](uint64_t done, uint64_t total) -> Status {
    EXPECT_LE(done, total);
    if (++calls == 20) return Error(ErrorKind::kIo, "simulated disk full");
    return OkStatus();
  };
  auto r = WriteSynthModel(o, path.string());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("simulated disk full"), std::string::npos);
  EXPECT_GE(calls, 20);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_empty(dir_)) << "temporary file left behind";
}

TEST_F(SynthTest, AnInputIsNeverOverwritten) {
  // `synth --config C.json -o C.json` replaced the config with the model.
  const auto config = dir_ / "config.json";
  std::ofstream(config) << "{}";
  auto r = WriteSynthModel(Tiny("qwen3moe"), config.string(), {config.string()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("input"), std::string::npos) << r.error().message();
  EXPECT_EQ(Slurp(config), (std::vector<char>{'{', '}'}));
}

TEST_F(SynthTest, SizesBeyond64BitsAreAnError) {
  // Widths at the edge of their ranges in many layers: the sums of the tensor
  // sizes pass 2^64 bytes and are refused instead of wrapping.
  SynthSpec s = *SynthPreset("qwen3moe");
  s.n_layer = 2000;
  s.n_embd = kMaxSynthWidth;
  s.n_ff = s.n_ff_exp = kMaxSynthWidth;
  s.n_expert = kMaxSynthExperts;
  ASSERT_TRUE(ValidateSynthSpec(s).ok());
  auto sum = SummarizeSynth(s, SynthQuant::kF16);
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.error().message().find("2^64"), std::string::npos) << sum.error().message();
}

TEST_F(SynthTest, EveryTinyPresetIsSmallAndBuilds) {
  for (const auto& name : SynthPresetNames()) {
    auto sum = SummarizeSynth(ScaleSynthSpec(*SynthPreset(name), SynthScale{}), SynthQuant::kQ8_0);
    ASSERT_TRUE(sum.ok()) << name;
    EXPECT_LT(sum->tensor_bytes, 32u << 20) << name;
    EXPECT_GT(sum->tensor_bytes, 1u << 20) << name;
  }
}

}  // namespace
}  // namespace moetune
