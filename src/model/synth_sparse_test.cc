#include "model/synth_sparse.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model_info.h"

namespace moetune {
namespace {

TEST(SynthSparse, FullScaleShapeOpensLikeTheRealFileAndTakesLittleDisk) {
  const std::string path =
      ::testing::TempDir() + "sparse_glm_" + std::to_string(::getpid()) + ".gguf";
  SynthOptions o;
  o.spec = *SynthPreset("glm4moe");
  o.quant = SynthQuant::kQ4_K_M;
  auto sum = WriteSparseSynthModel(o, path);
  ASSERT_TRUE(sum.ok()) << sum.error().message();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_GT(static_cast<uint64_t>(st.st_size), sum->tensor_bytes);           // header + data
  EXPECT_LT(static_cast<uint64_t>(st.st_blocks) * 512, uint64_t{64} << 20);  // a hole
  auto info = LoadModelInfo(path);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(static_cast<uint64_t>(info->weights.total), sum->tensor_bytes);
  EXPECT_EQ(info->arch.hp.n_layer, 46u);
  ::unlink(path.c_str());
  EXPECT_FALSE(WriteSparseSynthModel(o, "/nonexistent-dir/x.gguf").ok());
}

}  // namespace
}  // namespace moetune
