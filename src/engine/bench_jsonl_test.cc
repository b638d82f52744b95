#include "engine/bench_jsonl.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

// A real line from llama-bench 0.7.0 (Debian build 11669) on a synthesized model.
constexpr const char* kRealLine =
    R"JSON({"build_commit": "Debian", "build_number": 11669, "cpu_info": "Intel(R) Xeon(R) Processor", "gpu_info": "", "backends": "CPU", "model_filename": "tiny.gguf", "model_type": "qwen3moe ?B (guessed) all F32", "model_size": 1125120, "model_n_params": 281280, "n_batch": 2048, "n_ubatch": 512, "n_threads": 2, "cpu_mask": "0x0", "cpu_strict": false, "poll": 50, "type_k": "f16", "type_v": "f16", "n_gpu_layers": -1, "n_cpu_moe": 0, "split_mode": "layer", "main_gpu": 0, "no_kv_offload": false, "flash_attn": -1, "devices": "auto", "tensor_split": "0.00", "tensor_buft_overrides": "none", "load_mode": "auto", "lazy_mode": "auto", "embeddings": false, "no_op_offload": 0, "no_host": false, "repack": true, "fit_target": 0, "fit_min_ctx": 0, "n_prompt": 16, "n_gen": 0, "n_depth": 0, "test_time": "2026-11-30T10:11:34Z", "avg_ns": 478073, "stddev_ns": 69790, "avg_ts": 33828.040761, "stddev_ts": 4937.827621, "samples_ns": [ 527418, 428729 ],"samples_ts": [ 30336.5, 37319.6 ]})JSON";

TEST(BenchJsonlTest, ParsesRealLineByFieldName) {
  auto r = ParseBenchRecord(kRealLine);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->n_prompt, 16);
  EXPECT_EQ(r->n_gen, 0);
  EXPECT_EQ(r->n_ubatch, 512);
  EXPECT_EQ(r->n_batch, 2048);
  EXPECT_EQ(r->n_gpu_layers, -1);
  EXPECT_EQ(r->type_k, "f16");
  EXPECT_EQ(r->flash_attn, "auto");
  EXPECT_EQ(r->backends, "CPU");
  EXPECT_EQ(r->samples_ts.size(), 2u);
  EXPECT_EQ(r->samples_ns.size(), 2u);
  EXPECT_GT(r->avg_ts, 0);
  EXPECT_EQ(r->raw["model_filename"], "tiny.gguf");
}

TEST(BenchJsonlTest, FieldOrderAndExtraFieldsDoNotMatter) {
  auto r = ParseBenchRecord(
      R"({"future_field": [1,2], "avg_ts": 12.5, "n_gen": 128, "n_prompt": 0, "flash_attn": true,
          "samples_ts": [12, 13], "n_threads": 8})");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->n_gen, 128);
  EXPECT_EQ(r->n_threads, 8);
  EXPECT_EQ(r->flash_attn, "on");
  EXPECT_DOUBLE_EQ(r->samples_ts[1], 13);
}

TEST(BenchJsonlTest, MissingOrMistypedRequiredFieldIsNamed) {
  auto r = ParseBenchRecord(R"({"n_prompt": 512, "n_gen": 0})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("avg_ts"), std::string::npos);
  r = ParseBenchRecord(R"({"n_prompt": "x", "n_gen": 0, "avg_ts": 1})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("n_prompt"), std::string::npos);
  r = ParseBenchRecord("{not json");
  ASSERT_FALSE(r.ok());
}

TEST(BenchJsonlTest, SingleMeanBecomesOneSample) {
  auto r = ParseBenchRecord(R"({"n_prompt": 0, "n_gen": 16, "avg_ts": 20})");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->samples_ts.size(), 1u);
  EXPECT_DOUBLE_EQ(r->samples_ts[0], 20);
}

TEST(BenchJsonlTest, JsonlSkipsNonObjectsAndReportsBadLines) {
  std::vector<std::string> bad;
  const auto records =
      ParseBenchJsonl(std::string("noise\n") + kRealLine + "\n{\"n_prompt\": 1}\n\n", &bad);
  EXPECT_EQ(records.size(), 1u);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].find("n_gen"), std::string::npos);
}

TEST(BenchJsonlTest, OutOfRangeNumbersAreErrorsNotWrapped) {
  // 2^32 + 16 tokens would wrap to 16 in an int; 1e300 ns has no int64.
  auto r = ParseBenchRecord(R"({"n_prompt": 0, "n_gen": 4294967312, "avg_ts": 1})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("n_gen"), std::string::npos);
  EXPECT_NE(r.error().message().find("out of range"), std::string::npos);
  r = ParseBenchRecord(R"({"n_prompt": 0, "n_gen": 16, "avg_ts": 1, "samples_ns": [1e300]})");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("samples_ns"), std::string::npos);
  r = ParseBenchRecord(R"({"n_prompt": 0, "n_gen": 16, "avg_ts": 1e999})");
  EXPECT_FALSE(r.ok());
  r = ParseBenchRecord(R"({"n_prompt": -5, "n_gen": 16, "avg_ts": 1})");
  EXPECT_FALSE(r.ok());
  r = ParseBenchRecord(
      R"({"n_prompt": 0, "n_gen": 16, "avg_ts": 1, "n_gpu_layers": -1, "flash_attn": -1})");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->n_gpu_layers, -1);
  EXPECT_EQ(r->flash_attn, "auto");
}

TEST(BenchJsonlTest, DeepNestingAndHugeLinesFailCleanly) {
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::vector<std::string> bad;
  EXPECT_TRUE(ParseBenchJsonl(deep + "\n" + std::string(3 << 20, '{'), &bad).empty());
  EXPECT_EQ(bad.size(), 2u);
}

}  // namespace
}  // namespace moetune
