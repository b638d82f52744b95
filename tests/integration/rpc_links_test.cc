// The real llama.cpp over an RPC device on emulated network links (issue 20,
// item 5): ggml-rpc-server in a network namespace of its own behind a veth
// pair shaped to 1 and 10 Gbit/s (emulated_link.h), and llama-bench on this
// side with --rpc. The decode of a model whose output head is on the RPC
// device moves the logits (n_vocab * 4 bytes) across the link for every
// token, so a slower link must show in the measured speed; the figures per
// link are printed.

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "emulated_link.h"
#include "engine/bench_jsonl.h"
#include "stats/summary.h"
#include "support.h"
#include "util/child_cleanup.h"

namespace moetune::itest {
namespace {

// A small qwen3moe whose logits are large next to its compute: a vocabulary
// of 262144 (Gemma 3's) makes 1 MiB of logits per token (8.4 ms at 1 Gbit/s,
// 0.84 ms at 10), while the narrow width (128) and 16 small experts keep the
// weights at 75 MiB and a token at a few milliseconds of one core.
constexpr const char* kConfig = R"({"model_type": "qwen3_moe", "num_hidden_layers": 8,
  "hidden_size": 128, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64,
  "vocab_size": 262144, "max_position_embeddings": 4096, "num_experts": 16,
  "num_experts_per_tok": 4, "moe_intermediate_size": 128, "intermediate_size": 256})";
constexpr double kLogitsBytes = 262144.0 * 4;

// Placements: every layer on the RPC device (-ngl 99), and a split: -ngl 4
// is the output head and the last 3 layers on the RPC device (this engine
// counts the head first), layers 0-4 on the CPU. Either way the head, and so
// the logits, is on the RPC device.
constexpr int kAllOnRpc = 99;
constexpr int kSplit = 4;
constexpr int kPrompt = 128;
constexpr int kGen = 64;
constexpr int kReps = 3;

struct LinkRun {
  std::string name;  // "unshaped", "10 Gbit/s", "1 Gbit/s"
  double rate_gbit = 0;
  std::vector<BenchRecord> records;
  double rx_bytes = 0;  // what the server sent over the link during the bench
};

uint64_t InterfaceCounter(const std::string& interface, const std::string& counter) {
  std::ifstream in("/sys/class/net/" + interface + "/statistics/" + counter);
  uint64_t v = 0;
  in >> v;
  return v;
}

class RpcLinksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string config = dir_->File("config.json");
    std::ofstream(config) << kConfig;
    const auto r = RunCommand({MoetuneBinary(), "synth", "--config", config, "--scale", "full",
                               "-o", dir_->File("links.gguf")},
                              300);
    if (r.exit_code == 0) model_ = dir_->File("links.gguf");
    synth_error_ = r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    ASSERT_FALSE(model_.empty()) << "moetune synth failed: " << synth_error_;
    const auto engine = EngineDir();
    ASSERT_TRUE(engine.has_value())
        << "llama.cpp not found: run scripts/setup-engine.sh or set MOETUNE_LLAMA_DIR";
    engine_ = *engine;
  }
  void TearDown() override {
    EXPECT_TRUE(LeftoverDescendants().empty());
    EXPECT_EQ(LiveChildGroupCount(), 0);
  }

  // llama-bench over a fresh link of `rate_gbit` (0: unshaped): both placements.
  LinkRun Measure(const std::string& name, double rate_gbit) const {
    LinkRun run{name, rate_gbit, {}, 0};
    EmulatedLink link(engine_, rate_gbit);
    EXPECT_TRUE(link.ok()) << link.error();
    if (!link.ok()) return run;
    const uint64_t rx0 = InterfaceCounter(link.host_interface(), "rx_bytes");
    const CommandResult r = RunCommand(
        {(engine_ / "llama-bench").string(), "-m", model_, "--rpc", link.endpoint(), "-ngl",
         fmt::format("{},{}", kAllOnRpc, kSplit), "-p", std::to_string(kPrompt), "-n",
         std::to_string(kGen), "-r", std::to_string(kReps), "-t", "1", "-o", "jsonl"},
        300);
    run.rx_bytes = static_cast<double>(InterfaceCounter(link.host_interface(), "rx_bytes") - rx0);
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err << "\nserver log:\n" << link.ServerLog();
    run.records = ParseBenchJsonl(r.out);
    EXPECT_EQ(run.records.size(), 4u) << name << ": " << r.out;
    return run;
  }

  static TempDir* dir_;
  static std::string model_;
  static std::string synth_error_;
  std::filesystem::path engine_;
};

TempDir* RpcLinksTest::dir_ = nullptr;
std::string RpcLinksTest::model_;
std::string RpcLinksTest::synth_error_;

// The record of one placement and test (prefill or decode); nullptr when missing.
const BenchRecord* Find(const LinkRun& run, int ngl, bool prefill) {
  for (const auto& r : run.records) {
    if (r.n_gpu_layers == ngl && (r.n_prompt > 0) == prefill) return &r;
  }
  return nullptr;
}

// Milliseconds per token, from the median repetition.
double MsPerToken(const BenchRecord& r) { return 1000.0 / Median(r.samples_ts); }

void PrintFigures(const std::vector<LinkRun>& runs) {
  std::string table = fmt::format(
      "RPC over emulated links (llama-bench -p {} -n {} -r {} -t 1, ggml-rpc-server -t 1), "
      "median t/s:\n| link | pp{} all | tg{} all | pp{} split | tg{} split | MB from server |\n",
      kPrompt, kGen, kReps, kPrompt, kGen, kPrompt, kGen);
  for (const auto& run : runs) {
    table += "| " + run.name;
    for (int ngl : {kAllOnRpc, kSplit}) {
      for (bool prefill : {true, false}) {
        const BenchRecord* r = Find(run, ngl, prefill);
        table += r ? fmt::format(" | {:.1f}", Median(r->samples_ts)) : " | -";
      }
    }
    table += fmt::format(" | {:.1f} |\n", run.rx_bytes / 1e6);
  }
  std::cout << table << std::flush;
}

TEST_F(RpcLinksTest, TheLinkIsMadeShapedAndRemoved) {
  std::string netns, host_if;
  pid_t server = -1;
  {
    EmulatedLink link(engine_, 1.0);
    ASSERT_TRUE(link.ok()) << link.error();
    netns = link.netns();
    host_if = link.host_interface();
    server = link.server_pid();
    const auto names = EmulatedLinkNamespaces();
    EXPECT_NE(std::find(names.begin(), names.end(), netns), names.end());
    EXPECT_TRUE(InterfaceExists(host_if));
    EXPECT_EQ(link.burst_bytes(), 64 * 1024);
    const std::string shown = NetToolOutput("tc", {"qdisc", "show", "dev", host_if});
    EXPECT_NE(shown.find("tbf"), std::string::npos) << shown;
    EXPECT_NE(shown.find("rate 1Gbit"), std::string::npos) << shown;
    const std::string inside = NetToolOutput("tc", {"-n", netns, "qdisc", "show"});
    EXPECT_NE(inside.find("rate 1Gbit"), std::string::npos) << inside;
    EXPECT_FALSE(ProcessGone(server, 0.1));
    // In 198.18.0.0/15.
    EXPECT_TRUE(link.endpoint().rfind("198.18.", 0) == 0 ||
                link.endpoint().rfind("198.19.", 0) == 0)
        << link.endpoint();
  }
  EXPECT_TRUE(ProcessGone(server));
  EXPECT_FALSE(InterfaceExists(host_if));
  const auto names = EmulatedLinkNamespaces();
  EXPECT_EQ(std::find(names.begin(), names.end(), netns), names.end());
}

// Decode with the head on the RPC device moves kLogitsBytes per token from
// the server: over 1 Gbit/s that takes (at the rate, less the tbf bucket)
// about 7.6 ms more per token than over 10 Gbit/s. At least half of that must
// show in each placement, whatever else the machine is doing meanwhile.
TEST_F(RpcLinksTest, DecodeIsSlowerOverASlowerLink) {
  std::vector<LinkRun> runs;
  runs.push_back(Measure("unshaped", 0));
  runs.push_back(Measure("10 Gbit/s", 10));
  runs.push_back(Measure("1 Gbit/s", 1));
  PrintFigures(runs);
  const LinkRun& fast = runs[1];
  const LinkRun& slow = runs[2];
  // The logits crossed the link: every decoded token (with the warm-up run)
  // sent them from the server, over the veth of this link.
  const double tokens = 2.0 * kGen * kReps;
  EXPECT_GE(slow.rx_bytes, tokens * kLogitsBytes) << "the decode traffic did not cross the link";
  const double extra_ms = (kLogitsBytes - static_cast<double>(TbfBurstBytes(1))) * 8 / 1e9 * 1e3 -
                          kLogitsBytes * 8 / 10e9 * 1e3;
  for (int ngl : {kAllOnRpc, kSplit}) {
    const BenchRecord* f = Find(fast, ngl, false);
    const BenchRecord* s = Find(slow, ngl, false);
    ASSERT_TRUE(f != nullptr && s != nullptr) << "-ngl " << ngl << ": no decode record";
    const double gap = MsPerToken(*s) - MsPerToken(*f);
    EXPECT_GT(gap, 0.5 * extra_ms)
        << "-ngl " << ngl << ": " << MsPerToken(*s) << " ms/token over 1 Gbit/s, " << MsPerToken(*f)
        << " over 10 Gbit/s";
  }
}

}  // namespace
}  // namespace moetune::itest
