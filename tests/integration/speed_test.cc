// Integration: the speed model's commands end to end with the real moetune
// binary: `plan --predict` and `bench --engine sim` on full-scale sparse synth
// shapes, `machines`, and a short real `calibrate --quick` on a tiny model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "speed/calibration_fit.h"
#include "support.h"

namespace moetune::itest {
namespace {

class SpeedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    for (const char* preset : {"qwen3moe", "gpt-oss-120b"}) {
      const std::string quant = std::string(preset) == "gpt-oss-120b" ? "mxfp4" : "q4_k_m";
      const auto r =
          RunCommand({MoetuneBinary(), "synth", "--preset", preset, "--scale", "full", "--quant",
                      quant, "--sparse", "-o", dir_->File(std::string(preset) + ".gguf")},
                     120);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { delete dir_; }
  // Runs moetune with no machine profile (the defaults) unless `profile` is given.
  static CommandResult Moetune(std::vector<std::string> args, const std::string& profile = "") {
    std::vector<std::string> argv = {
        "/usr/bin/env", "MOETUNE_PROFILE=" + (profile.empty() ? dir_->File("none.json") : profile),
        MoetuneBinary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, 600);
  }
  static TempDir* dir_;
};

TempDir* SpeedTest::dir_ = nullptr;

TEST_F(SpeedTest, PlanPredictGivesEveryOptionAndTheBestSafeN) {
  const auto r = Moetune({"plan", dir_->File("qwen3moe.gguf"), "--ctx", "32K", "--predict",
                          "--machine", "rtx4070-12g,ddr5-6000-2ch,8c16t", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["options"].size(), 49u);
  for (const auto& o : j["options"]) {
    const auto& p = o["predicted"];
    if (!p["loads"].get<bool>()) continue;
    EXPECT_GT(p["prefill_tps"].get<double>(), 0);
    EXPECT_GT(p["decode_tps"].get<double>(), 0);
    EXPECT_TRUE(p["binding"].is_string());
  }
  ASSERT_FALSE(j["predicted_best"].is_null());
  const int best = j["predicted_best"]["n_cpu_moe"].get<int>();
  EXPECT_TRUE(j["options"][static_cast<size_t>(best)]["fits"].get<bool>());
  EXPECT_GE(best, j["n_cpu_moe_without_fine_fill"].get<int>());
  // Without a calibration every prediction carries the published runs' band
  // and says how to calibrate (docs/speed-model.md, "Uncalibrated predictions").
  EXPECT_FALSE(j["prediction"]["uncertainty"]["calibrated"].get<bool>());
  EXPECT_NE(j["prediction"]["uncertainty"]["how_to_calibrate"].get<std::string>().find(
                "moetune calibrate"),
            std::string::npos);
  EXPECT_EQ(j["predicted_best"]["decode_tps_range"].size(), 2u);
  // Text form.
  const auto t = Moetune({"plan", dir_->File("qwen3moe.gguf"), "--ctx", "32K", "--predict",
                          "--machine", "rtx4070-12g"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("Predicted best safe: --n-cpu-moe"), std::string::npos);
  EXPECT_NE(t.out.find("uncalibrated"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("--measurements"), std::string::npos) << t.out;
}

TEST_F(SpeedTest, SimulatedBenchIsReproducibleAndMarked) {
  const std::vector<std::string> args = {"bench",     dir_->File("gpt-oss-120b.gguf"),
                                         "--engine",  "sim",
                                         "--machine", "rtx4090-24g,ddr5-6000-2ch,16c32t",
                                         "--ncmoe",   "28,36",
                                         "-d",        "0,8192",
                                         "-r",        "3",
                                         "--json"};
  auto with_seed = [&](const char* seed) {
    auto a = args;
    a.insert(a.end(), {"--seed", seed});
    return Moetune(a);
  };
  const auto a = with_seed("5"), b = with_seed("5"), c = with_seed("6");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out),
             jc = nlohmann::json::parse(c.out);
  EXPECT_TRUE(ja["simulated"].get<bool>());
  ASSERT_EQ(ja["results"].size(), 8u);
  EXPECT_EQ(ja["model_loads"], 2);
  for (size_t i = 0; i < ja["results"].size(); ++i) {
    EXPECT_EQ(ja["results"][i]["samples_ns"], jb["results"][i]["samples_ns"]);
    EXPECT_NE(ja["results"][i]["samples_ns"], jc["results"][i]["samples_ns"]);
    EXPECT_TRUE(ja["results"][i]["engine_record"]["simulated"].get<bool>());
    EXPECT_EQ(ja["results"][i]["engine_record"]["predicted_tps_range"].size(), 2u);
  }
  EXPECT_FALSE(ja["uncertainty"]["calibrated"].get<bool>());
  const auto md = Moetune({"bench", dir_->File("gpt-oss-120b.gguf"), "--engine", "sim", "--machine",
                           "rtx4090-24g", "--ncmoe", "36", "-r", "2"});
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out.rfind("SIMULATED", 0), 0u);
  EXPECT_NE(md.out.find("SIM CUDA (NVIDIA GeForce RTX 4090 24 GB)"), std::string::npos);
  EXPECT_NE(md.out.find("uncalibrated"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("moetune calibrate MODEL"), std::string::npos) << md.out;
}

TEST_F(SpeedTest, StrictOverflowFailsAsDeviceOomSilentSpillRuns) {
  const std::vector<std::string> base = {"bench",     dir_->File("qwen3moe.gguf"),
                                         "--engine",  "sim",
                                         "--machine", "rtx4070-12g",
                                         "--ncmoe",   "0",
                                         "-r",        "2",
                                         "--json"};
  auto strict = Moetune(base);
  EXPECT_EQ(strict.exit_code, 1);
  const auto js = nlohmann::json::parse(strict.out);
  EXPECT_EQ(js["results"][0]["failure"]["kind"], "oom_device");
  auto silent_args = base;
  silent_args.insert(silent_args.end(), {"--spill", "silent"});
  const auto silent = Moetune(silent_args);
  ASSERT_EQ(silent.exit_code, 0) << silent.err;
  const auto jl = nlohmann::json::parse(silent.out);
  EXPECT_GT(jl["results"][0]["engine_record"]["spill_bytes"].get<int64_t>(), 0);
  // A bad what-if value is a bad command line: exit 2 with the flag and the value named.
  auto bad = base;
  bad.insert(bad.end(), {"--gpu-bw", "fast"});
  const auto b = Moetune(bad);
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("--gpu-bw: bad bandwidth 'fast'"), std::string::npos) << b.err;
  auto bad_engine = base;
  bad_engine[3] = "vulkan";
  EXPECT_EQ(Moetune(bad_engine).exit_code, 2);
}

TEST_F(SpeedTest, MachinesListsPresetsWithSources) {
  const auto r = Moetune({"machines", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GE(j.size(), 25u);
  int gpus = 0;
  for (const auto& p : j) {
    EXPECT_FALSE(p["source"].get<std::string>().empty());
    gpus += p["kind"] == "gpu" ? 1 : 0;
  }
  EXPECT_GE(gpus, 10);
}

TEST_F(SpeedTest, QuickCalibrationWithTheRealEngine) {
  const auto engine = EngineDir();
  ASSERT_TRUE(engine.has_value()) << "no llama.cpp engine (scripts/setup-engine.sh)";
  const std::string model = dir_->File("tiny.gguf");
  ASSERT_EQ(
      RunCommand({MoetuneBinary(), "synth", "--preset", "qwen3moe", "-o", model}, 120).exit_code,
      0);
  // A short deep run (decode at 1024, beyond --depth) keeps the test quick.
  const auto r =
      Moetune({"calibrate", model, "--quick", "-r", "2", "--depth", "256", "--deep-depth", "1024",
               "--no-save", "--json", "--llama-dir", engine->string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["points"].size(), 5u);  // pp and tg at depth 0 and 256, tg at 1024
  EXPECT_EQ(j["points"][4]["n_depth"].get<int>(), 1024);
  EXPECT_FALSE(j["points"][4]["prefill"].get<bool>());
  for (const auto& p : j["points"]) EXPECT_GT(p["measured_tps"].get<double>(), 0);
  const auto fitted = j["fitted"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(fitted.begin(), fitted.end(), "cpu_matmul_efficiency"), fitted.end());
  EXPECT_NE(std::find(fitted.begin(), fitted.end(), "cpu_attn_decode_efficiency"), fitted.end());
  EXPECT_LE(j["median_error"].get<double>(), j["median_error_default"].get<double>() + 1e-9);
  EXPECT_TRUE(j["engine_version"].get<std::string>().find("version") != std::string::npos);
  // Its own uncertainty: leave-one-out over the five tests, the spread of the
  // repetitions (an unstable test measured twice), the machine's load.
  const auto& u = j["uncertainty"];
  EXPECT_EQ(u["held_out_folds"].get<int>(), 5);
  EXPECT_GE(u["held_out_prefill"].get<double>(), 0);
  EXPECT_GT(u["held_out_decode"].get<double>(), 0);
  EXPECT_GE(u["spread_max"].get<double>(), u["spread_median"].get<double>());
  EXPECT_TRUE(u["other_cores_max"].is_number()) << u.dump();
  for (const auto& p : j["points"]) {
    const int rounds = p["rounds"].get<int>();
    EXPECT_TRUE(rounds == 1 || rounds == 2) << p.dump();
    // A test is measured again only when its first round was unstable.
    if (rounds == 1) {
      EXPECT_LE(p["spread"].get<double>(), kUnstableRepetitionSpread) << p.dump();
    }
  }
}

}  // namespace
}  // namespace moetune::itest
