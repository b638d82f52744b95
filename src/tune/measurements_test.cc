#include "tune/measurements.h"

#include <gtest/gtest.h>

#include <fstream>

#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

const char* kLine =
    R"({"model_filename":"m.gguf","n_prompt":512,"n_gen":0,"n_depth":0,"n_threads":8,)"
    R"("n_batch":2048,"n_ubatch":512,"n_gpu_layers":99,"n_cpu_moe":12,"type_k":"f16",)"
    R"("type_v":"f16","flash_attn":true,"avg_ts":300.5,"stddev_ts":3.1,)"
    R"("samples_ts":[298.0,301.0,302.5]})";

TEST(MeasurementsTest, LlamaBenchJsonlAndJsonArray) {
  auto a = ParseMeasurements(std::string(kLine) + "\n" + kLine + "\nnot json\n", "a.jsonl");
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->results.size(), 2u);
  const RunResult& r = a->results[0];
  EXPECT_EQ(r.config.placement.n_cpu_moe, 12);
  EXPECT_EQ(r.config.threads, 8);
  EXPECT_EQ(r.config.n_prompt, 512);
  EXPECT_EQ(r.config.flash_attn, FlashAttn::kOn);
  EXPECT_EQ(r.samples_ts.size(), 3u);
  EXPECT_EQ(a->files[0].skipped, 1u);
  auto b = ParseMeasurements(std::string("[") + kLine + "," + kLine + "]", "b.json");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->results.size(), 2u);
  EXPECT_EQ(b->files[0].format, "llama-bench json");
}

TEST(MeasurementsTest, MeanAndSdOnlyKeepsTheSpread) {
  const std::string line =
      R"({"n_prompt":0,"n_gen":128,"n_cpu_moe":4,"avg_ts":30.0,"stddev_ts":0.6})";
  auto a = ParseMeasurements(line, "old.jsonl");
  ASSERT_TRUE(a.ok());
  bool assumed = false;
  const Summary s = ResultStats(a->results[0], 5, &assumed);
  EXPECT_TRUE(assumed);
  EXPECT_EQ(s.n, 5u);
  ASSERT_TRUE(s.stddev);
  EXPECT_DOUBLE_EQ(*s.stddev, 0.6);
  EXPECT_DOUBLE_EQ(s.mean, 30.0);
}

TEST(MeasurementsTest, MoetuneBenchJsonWithFailures) {
  const std::string doc = R"({"results":[
    {"test":"pp64","model":"m.gguf","n_prompt":64,"n_gen":0,"n_depth":0,"threads":2,
     "n_gpu_layers":99,"n_cpu_moe":3,"n_ubatch":512,"n_batch":2048,"type_k":"f16","type_v":"f16",
     "flash_attn":"","ok":true,"samples_ts":[100,101,99],"tokens_per_second":{"mean":100}},
    {"test":"pp64","model":"m.gguf","n_prompt":64,"n_gen":0,"n_cpu_moe":2,"ok":false,
     "failure":{"kind":"oom_device","message":"out of memory","exit":"exit code 1"}}]})";
  auto a = ParseMeasurements(doc, "bench.json");
  ASSERT_TRUE(a.ok()) << a.error().message();
  ASSERT_EQ(a->results.size(), 2u);
  EXPECT_TRUE(a->results[0].ok());
  ASSERT_FALSE(a->results[1].ok());
  EXPECT_EQ(a->results[1].failure->kind, FailureKind::kOutOfMemoryDevice);
  EXPECT_EQ(a->files[0].format, "moetune bench");
}

TEST(MeasurementsTest, GarbageIsAClearError) {
  for (const char* text : {"", "   \n", "hello world", "{\"a\":1}", "[1,2,3]", "{\"results\":5}"}) {
    auto r = ParseMeasurements(text, "x");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().kind(), ErrorKind::kFormat) << text;
  }
}

TEST(MeasurementsTest, FilesMustBeRegularAndBounded) {
  testing::TempDir dir;
  auto d = LoadMeasurements({dir.path()});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("directory"), std::string::npos);
  auto z = LoadMeasurements({"/dev/zero"});
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().message().find("not a regular file"), std::string::npos);
  auto m = LoadMeasurements({dir.File("missing.jsonl")});
  ASSERT_FALSE(m.ok());
  std::ofstream(dir.File("ok.jsonl")) << kLine << "\n";
  std::ofstream(dir.File("ok2.jsonl")) << kLine << "\n";
  auto two = LoadMeasurements({dir.File("ok.jsonl"), dir.File("ok2.jsonl")});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->results.size(), 2u);
  EXPECT_EQ(two->files.size(), 2u);
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

std::string Records(std::size_t n) {
  std::string text;
  for (std::size_t i = 0; i < n; ++i) {
    text += R"({"n_prompt":512,"n_gen":0,"n_threads":)" + std::to_string(1 + i % 64) +
            R"(,"avg_ts":100})" + "\n";
  }
  return text;
}

TEST(MeasurementsTest, TheResultsOfAllFilesTogetherAreBounded) {
  auto one = ParseMeasurements(Records(kMaxMeasurementResults + 1), "big.jsonl");
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().message().find("more than 100000 results"), std::string::npos)
      << one.error().message();
  // Each file alone fits; together they do not.
  testing::TempDir dir;
  const std::string a = dir.File("a.jsonl"), b = dir.File("b.jsonl");
  std::ofstream(a) << Records(kMaxMeasurementResults / 2 + 10);
  std::ofstream(b) << Records(kMaxMeasurementResults / 2 + 10);
  ASSERT_TRUE(LoadMeasurements({a}).ok());
  auto both = LoadMeasurements({a, b});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.error().message().find("in the files together"), std::string::npos)
      << both.error().message();
}

}  // namespace
}  // namespace moetune
