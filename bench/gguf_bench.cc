// Times ReadGgufFile on a realistic MoE header: 1,000+ tensor infos (48 layers
// of a Qwen3-30B-A3B-like shape) and a tokenizer with 151,936 tokens, 151,387
// merges and token types. The tensor data section exists only as a sparse hole
// (ftruncate), ~17 GB that the reader must never touch: the figure is the cost
// of reading a big model's header. Target: well under 50 ms.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "gguf/ggml_type.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "sparse_model.h"

namespace moetune {
namespace {

constexpr int kLayers = 48;

GgufWriter SyntheticModel() {
  GgufWriter w;
  w.SetString("general.architecture", "qwen3moe");
  w.SetString("general.name", "synthetic bench model");
  w.SetU32("qwen3moe.block_count", kLayers);
  w.SetU32("qwen3moe.embedding_length", 2048);
  w.SetU32("qwen3moe.expert_count", 128);
  w.SetU32("qwen3moe.expert_used_count", 8);
  w.SetU32("qwen3moe.expert_feed_forward_length", 768);
  w.SetU32("qwen3moe.attention.head_count", 32);
  w.SetU32("qwen3moe.attention.head_count_kv", 4);
  w.SetString("tokenizer.ggml.model", "gpt2");
  std::vector<std::string> tokens(151936), merges(151387);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = "tok_" + std::to_string(i);
  for (size_t i = 0; i < merges.size(); ++i) merges[i] = "m" + std::to_string(i) + " x";
  w.SetStringArray("tokenizer.ggml.tokens", tokens);
  w.SetStringArray("tokenizer.ggml.merges", merges);
  w.SetIntArray("tokenizer.ggml.token_type", GgufValueType::kInt32,
                std::vector<int64_t>(tokens.size(), 1));
  w.SetString("tokenizer.chat_template", std::string(8000, 'c'));

  auto add = [&](const std::string& name, std::vector<int64_t> ne, uint32_t type) {
    if (!w.AddTensor(name, std::move(ne), type).ok()) std::abort();
  };
  add("token_embd.weight", {2048, 151936}, ggml_type::kQ4_K);
  add("output.weight", {2048, 151936}, ggml_type::kQ6_K);
  add("output_norm.weight", {2048}, ggml_type::kF32);
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {2048}, ggml_type::kF32);
    add(p + "attn_q.weight", {2048, 4096}, ggml_type::kQ4_K);
    add(p + "attn_k.weight", {2048, 512}, ggml_type::kQ4_K);
    add(p + "attn_v.weight", {2048, 512}, ggml_type::kQ6_K);
    add(p + "attn_output.weight", {4096, 2048}, ggml_type::kQ4_K);
    add(p + "attn_q_norm.weight", {128}, ggml_type::kF32);
    add(p + "attn_k_norm.weight", {128}, ggml_type::kF32);
    add(p + "ffn_norm.weight", {2048}, ggml_type::kF32);
    add(p + "ffn_gate_inp.weight", {2048, 128}, ggml_type::kF32);
    add(p + "ffn_gate_exps.weight", {2048, 768, 128}, ggml_type::kQ4_K);
    add(p + "ffn_up_exps.weight", {2048, 768, 128}, ggml_type::kQ4_K);
    add(p + "ffn_down_exps.weight", {768, 2048, 128}, ggml_type::kQ6_K);
    for (int extra = 0; extra < 9; ++extra) {  // reach 1,000+ tensor infos
      add(p + "extra_" + std::to_string(extra) + ".weight", {256}, ggml_type::kF32);
    }
  }
  return w;
}

const std::string& ModelPath() {
  static const std::string path = WriteSparseModel(SyntheticModel(), "moetune_gguf_bench");
  return path;
}

void BM_ReadGgufFile(benchmark::State& state) {
  GgufReadOptions options;
  options.keep_large_arrays = state.range(0) != 0;
  const std::string& path = ModelPath();
  size_t n = 0;
  for (auto _ : state) {
    auto f = ReadGgufFile(path, options);
    if (!f.ok()) {
      state.SkipWithError(f.error().message().c_str());
      return;
    }
    n = f->tensors.size();
    benchmark::DoNotOptimize(f->tensors.data());
  }
  state.counters["tensors"] = static_cast<double>(n);
}
BENCHMARK(BM_ReadGgufFile)->Arg(0)->ArgName("keep_large_arrays")->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadGgufFile)->Arg(1)->ArgName("keep_large_arrays")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace moetune

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::remove(moetune::ModelPath().c_str());
  return 0;
}
