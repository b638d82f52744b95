// Integration: `moetune analyze` on a handwritten sweep (a cliff) and on real
// llama-bench output produced on this machine, plus bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support.h"

namespace moetune::itest {
namespace {

using json = nlohmann::json;

std::string Fixture(const std::string& name) {
  return std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/sweeps/" + name;
}

TEST(AnalyzeCli, CliffSweepGivesTheMethodsPick) {
  auto r = RunCommand({MoetuneBinary(), "analyze", Fixture("cliff.jsonl"), "--json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["curve"]["shape"], "cliff");
  ASSERT_EQ(j["cliffs"].size(), 1u);
  EXPECT_EQ(j["cliffs"][0]["n_cpu_moe_safe"], 24);
  EXPECT_EQ(j["cliffs"][0]["n_cpu_moe_collapsed"], 23);
  EXPECT_LT(j["cliffs"][0]["prefill_ratio"].get<double>(), 0.3);
  EXPECT_EQ(j["recommendation"]["n_cpu_moe"], 25);
  EXPECT_EQ(j["rejected"].size(), 3u);  // 20, 22, 23 lie beyond the cliff
  auto text = RunCommand({MoetuneBinary(), "analyze", Fixture("cliff.jsonl")}, 60);
  ASSERT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("--n-cpu-moe 25"), std::string::npos) << text.out;
}

// A fine sweep with a cliff (N=23/24) plus depth runs at 8K: the peak N=24
// collapses at the target depth, its one-layer-safer neighbour N=25 stays
// healthy there, and N=26 is within the noise of N=25.
TEST(AnalyzeCli, PeakCollapsingAtDepthGivesItsHealthyNeighbour) {
  const std::string sweep = Fixture("peak_collapses_at_depth.jsonl");
  auto r = RunCommand({MoetuneBinary(), "analyze", sweep, "--ctx", "8K", "--json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& rec = j["recommendation"];
  EXPECT_EQ(rec["n_cpu_moe"], 25) << rec.dump();
  EXPECT_EQ(rec["rule"], "safe neighbour");
  EXPECT_EQ(rec["stepped_from"]["n_cpu_moe"], 24);
  EXPECT_EQ(rec["stepped_from"]["trouble"], "collapses");
  EXPECT_EQ(rec["stepped_from"]["depth"], 8192);
  EXPECT_TRUE(rec["proven_edge"].is_null());
  auto text = RunCommand({MoetuneBinary(), "analyze", sweep, "--ctx", "8K"}, 60);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("--n-cpu-moe 25"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("safe neighbour"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("one layer more conservative than N=24, which collapses at depth 8192"),
            std::string::npos)
      << text.out;
}

// The depth-0 cliff sweep with depth runs of N=24 and N=25 only, neither
// collapsing: the safety rule steps back from N=24 (llama-bench output has no
// memory figures), says what that costs, and --proven-edge takes N=24.
TEST(AnalyzeCli, SteppingBackPastAProvenEdgeSaysTheCostAndTheOption) {
  TempDir dir;
  const std::string sweep = dir.File("healthy_at_depth.jsonl");
  {
    std::ifstream in(Fixture("peak_collapses_at_depth.jsonl"));
    std::ofstream out(sweep);
    std::string line;
    while (std::getline(in, line)) {
      json l = json::parse(line);
      if (l["n_depth"] == 8192 && l["n_cpu_moe"] == 24) {
        for (auto& v : l["samples_ts"]) v = v.get<double>() * 5.2;  // healthy: ~465 t/s
        l["avg_ts"] = l["avg_ts"].get<double>() * 5.2;
        l["stddev_ts"] = l["stddev_ts"].get<double>() * 5.2;
      }
      out << l.dump() << "\n";
    }
  }
  auto r = RunCommand({MoetuneBinary(), "analyze", sweep, "--ctx", "8K", "--json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json rec = json::parse(r.out)["recommendation"];
  EXPECT_EQ(rec["rule"], "safety rule") << rec.dump();
  EXPECT_EQ(rec["edge"], 24);
  ASSERT_TRUE(rec["proven_edge"].is_object()) << rec.dump();
  EXPECT_EQ(rec["proven_edge"]["n_cpu_moe"], 24);
  const int pick = rec["n_cpu_moe"].get<int>();
  EXPECT_GT(pick, 24);
  const std::string reason = rec["reason"].get<std::string>();
  EXPECT_NE(reason.find("N=24, measured healthy at the target context, would be"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("--proven-edge"), std::string::npos) << reason;
  auto taken =
      RunCommand({MoetuneBinary(), "analyze", sweep, "--ctx", "8K", "--proven-edge", "--json"}, 60);
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  rec = json::parse(taken.out)["recommendation"];
  EXPECT_EQ(rec["n_cpu_moe"], 24) << rec.dump();
  EXPECT_EQ(rec["rule"], "edge proven safe");
  // Without a measurement at the target context nothing is proven.
  auto deeper = RunCommand(
      {MoetuneBinary(), "analyze", sweep, "--ctx", "32K", "--proven-edge", "--json"}, 60);
  ASSERT_EQ(deeper.exit_code, 0) << deeper.err;
  EXPECT_GT(json::parse(deeper.out)["recommendation"]["n_cpu_moe"].get<int>(), 24);
}

TEST(AnalyzeCli, RealLlamaBenchOutputFromThisMachine) {
  auto engine = EngineDir();
  ASSERT_TRUE(engine.has_value()) << "llama.cpp not found: run scripts/setup-engine.sh";
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  auto s = RunCommand(
      {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model}, 300);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  auto b = RunCommand({(*engine / "llama-bench").string(), "-m", model, "-ncmoe", "0,2,4", "-t",
                       "1", "-p", "32", "-n", "8", "-r", "2", "-o", "jsonl"},
                      600);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string results = dir.File("results.jsonl");
  std::ofstream(results) << b.out;
  auto r = RunCommand({MoetuneBinary(), "analyze", results, "--json", "--workload", "agent"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["results"], 6);
  EXPECT_EQ(j["curve"]["points"].size(), 3u);
  ASSERT_TRUE(j["recommendation"]["n_cpu_moe"].is_number());
  // This CPU-only engine runs every layer on the CPU, but on a shared machine
  // the three placements can still differ beyond their two repetitions: the
  // rules then give a peak. Whatever the shape, the pick follows its rule:
  // flat or monotonic keep the most conservative N measured; a peak takes one
  // layer more than its edge, or a safer N tied with the best.
  const int n = j["recommendation"]["n_cpu_moe"];
  const std::string shape = j["curve"]["shape"];
  if (shape == "flat" || shape == "monotonic") {
    EXPECT_EQ(n, 4) << shape;
  } else {
    EXPECT_EQ(j["recommendation"]["rule"], "safety rule") << r.out;
    EXPECT_GT(n, j["recommendation"]["edge"].get<int>()) << r.out;
    EXPECT_LE(n, 5) << r.out;
  }
  EXPECT_EQ(j["workload"]["prompt_tokens"], 8192);
}

TEST(AnalyzeCli, BadInputIsAClearError) {
  TempDir dir;
  auto missing = RunCommand({MoetuneBinary(), "analyze", dir.File("none.jsonl")}, 60);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("none.jsonl"), std::string::npos);
  std::ofstream(dir.File("junk.txt")) << "not results\n";
  auto junk = RunCommand({MoetuneBinary(), "analyze", dir.File("junk.txt")}, 60);
  EXPECT_EQ(junk.exit_code, 1);
  EXPECT_NE(junk.err.find("no benchmark results"), std::string::npos) << junk.err;
  auto workload =
      RunCommand({MoetuneBinary(), "analyze", Fixture("cliff.jsonl"), "--workload", "lots"}, 60);
  EXPECT_EQ(workload.exit_code, 2);
  EXPECT_NE(workload.err.find("--workload"), std::string::npos) << workload.err;
  auto ctx = RunCommand({MoetuneBinary(), "analyze", Fixture("cliff.jsonl"), "--ctx", "0"}, 60);
  EXPECT_EQ(ctx.exit_code, 2);
  auto none = RunCommand({MoetuneBinary(), "analyze"}, 60);
  EXPECT_EQ(none.exit_code, 2);
  // The output may not overwrite an input.
  auto self = RunCommand(
      {MoetuneBinary(), "analyze", Fixture("cliff.jsonl"), "-o", Fixture("cliff.jsonl")}, 60);
  EXPECT_EQ(self.exit_code, 1);
}

}  // namespace
}  // namespace moetune::itest
