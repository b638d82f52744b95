// Integration: files built to hurt, through the real binary. JSON nested
// 100,000 levels deep in every reader of outside JSON (no crash, an error or
// a skipped record that says why), records that ask for unbounded work,
// values that are not numbers, model names that forge lines or turn text
// around on the terminal, and the small promises of the docs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "support.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::vector<std::string> kSim = {"--engine", "sim", "--machine",
                                       "rtx4070-12g,ddr4-3200-2ch,8c16t"};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string Deep(int levels = 100000) {
  return std::string(static_cast<std::size_t>(levels), '[') +
         std::string(static_cast<std::size_t>(levels), ']');
}

// `text` with the JSON string "\"DEEP\"" replaced by 100,000 nested arrays.
std::string WithDeep(std::string text) {
  const auto at = text.find("\"DEEP\"");
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) text.replace(at, 6, Deep());
  return text;
}

// No crash (SIGSEGV is exit 139 through a shell, a signal here), no hang.
void ExpectNoCrash(const CommandResult& r, const std::string& what) {
  EXPECT_FALSE(r.timed_out) << what;
  EXPECT_EQ(r.signal, 0) << what << " crashed: " << r.err;
}

class HostileInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->File("m.gguf");
    auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> argv = {MoetuneBinary(), "tune",   model_,         "--ctx", "4K",
                                     "--no-journal",  "--json", "--no-progress"};
    argv.insert(argv.end(), kSim.begin(), kSim.end());
    auto t = RunCommand(argv, 600);
    ASSERT_EQ(t.exit_code, 0) << t.err;
    tune_json_ = new std::string(t.out);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete tune_json_;
  }
  void SetUp() override { ASSERT_NE(tune_json_, nullptr); }
  // The tune file with the first measurement's engine_record (or `field`)
  // nested 100,000 levels deep.
  static std::string DeepTuneFile(const std::string& field) {
    json j = json::parse(*tune_json_);
    EXPECT_TRUE(j["measurements"].is_array() && !j["measurements"].empty());
    if (field == "engine_record") {
      j["measurements"][0]["engine_record"] = "DEEP";
    } else {
      j[field] = "DEEP";
    }
    return WithDeep(j.dump());
  }
  TempDir tmp_;
  static TempDir* dir_;
  static std::string model_;
  static std::string* tune_json_;
};

TempDir* HostileInput::dir_ = nullptr;
std::string HostileInput::model_;
std::string* HostileInput::tune_json_ = nullptr;

TEST_F(HostileInput, DeepNestingIsRefusedByEveryReader) {
  // analyze: a JSONL line.
  const std::string jsonl = tmp_.File("deep.jsonl");
  std::ofstream(jsonl)
      << WithDeep(R"({"n_prompt":512,"n_gen":0,"avg_ts":100,"samples_ts":[100,101],"x":"DEEP"})")
      << "\n";
  auto r = RunCommand({MoetuneBinary(), "analyze", jsonl}, 120);
  ExpectNoCrash(r, "analyze on a deep JSONL line");
  EXPECT_EQ(r.exit_code, 1) << r.err;

  // report and analyze: a tune file with a deep measurements[].engine_record.
  const std::string tune = tmp_.File("deep-tune.json");
  std::ofstream(tune) << DeepTuneFile("engine_record");
  for (const char* command : {"report", "analyze"}) {
    r = RunCommand({MoetuneBinary(), command, tune}, 120);
    ExpectNoCrash(r, std::string(command) + " on a deep tune file");
    EXPECT_NE(r.exit_code, 0) << command;
  }
  r = RunCommand({MoetuneBinary(), "report", tune}, 120);
  EXPECT_NE(r.err.find("nested deeper than 128 levels"), std::string::npos) << r.err;

  // watch --from: a deep analysis.
  const std::string from = tmp_.File("deep-from.json");
  std::ofstream(from) << DeepTuneFile("analysis");
  r = RunCommand({MoetuneBinary(), "watch", "--log", tmp_.File("none.log"), "--from", from}, 120);
  ExpectNoCrash(r, "watch --from with a deep analysis");
  EXPECT_NE(r.exit_code, 0);

  // synth --config and plan --profile.
  const std::string config = tmp_.File("config.json");
  std::ofstream(config) << WithDeep(R"({"model_type":"qwen3_moe","x":"DEEP"})");
  r = RunCommand({MoetuneBinary(), "synth", "--config", config, "-o", tmp_.File("s.gguf")}, 120);
  ExpectNoCrash(r, "synth --config");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nested deeper"), std::string::npos) << r.err;
  const std::string profile = tmp_.File("profile.json");
  std::ofstream(profile) << WithDeep(R"({"gpus":[{"notes":"DEEP"}]})");
  r = RunCommand({MoetuneBinary(), "plan", model_, "--profile", profile}, 120);
  ExpectNoCrash(r, "plan --profile");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nested deeper"), std::string::npos) << r.err;
}

TEST_F(HostileInput, ADeepJournalRecordIsSkippedAndSaid) {
  const std::string journal = tmp_.File("deep.journal");
  std::vector<std::string> argv = {MoetuneBinary(), "tune",  model_,     "--ctx", "4K",
                                   "--journal",     journal, "--budget", "0.1",   "--json",
                                   "--no-progress"};
  argv.insert(argv.end(), kSim.begin(), kSim.end());
  ASSERT_EQ(RunCommand(argv, 300).exit_code, 0);
  std::string text = Slurp(journal);
  const std::string header = text.substr(0, text.find('\n') + 1);
  json rec =
      json::parse(text.substr(header.size(), text.find('\n', header.size()) - header.size()));
  rec["result"]["engine_record"] = "DEEP";
  std::ofstream(journal, std::ios::trunc) << header << WithDeep(rec.dump()) << "\n";
  auto r = RunCommand(argv, 300);
  ExpectNoCrash(r, "tune --journal with a deep engine_record");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("torn or unreadable"), std::string::npos) << r.err;
}

TEST_F(HostileInput, ARecordThatAsksForABillionTokensCostsNoMoreThanAnother) {
  const std::string jsonl = tmp_.File("huge.jsonl");
  std::ofstream(jsonl) << R"({"n_prompt":1073741824,"n_gen":0,"n_ubatch":1,"n_batch":1,)"
                       << R"("n_threads":8,"n_gpu_layers":99,"n_cpu_moe":0,"avg_ts":100,)"
                       << R"("samples_ts":[100,101,99]})"
                       << "\n";
  std::vector<std::string> argv = {MoetuneBinary(),
                                   "calibrate",
                                   model_,
                                   "--measurements",
                                   jsonl,
                                   "--machine",
                                   "rtx4070-12g,ddr4-3200-2ch,8c16t",
                                   "--no-save"};
  auto r = RunCommand(argv, 120);
  ExpectNoCrash(r, "calibrate --measurements with n_prompt 2^30");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(HostileInput, NotANumberIsABadCommandLine) {
  std::vector<std::vector<std::string>> lines = {
      {"tune", model_, "--ctx", "4K", "--budget", "nan"},
      {"tune", model_, "--ctx", "4K", "--budget", "inf"},
      {"demo", "--tune-budget", "nan"},
      {"bench", model_, "--engine", "sim", "--seed", "18446744073709551616"},
      {"bench", model_, "--engine", "sim", "--seed", "-1"},
      {"synth", "--preset", "qwen3moe", "--seed", "-1", "-o", tmp_.File("x.gguf")}};
  for (auto argv : lines) {
    argv.insert(argv.begin(), MoetuneBinary());
    auto r = RunCommand(argv, 60);
    EXPECT_EQ(r.exit_code, 2) << argv[1] << " " << argv.back() << ": " << r.err;
  }
}

TEST_F(HostileInput, AnalyzeReadsABoundedNumberOfResults) {
  std::string lines;
  for (int i = 0; i < 60000; ++i) {
    lines += R"({"n_prompt":512,"n_gen":0,"n_threads":)" + std::to_string(1 + i % 32) +
             R"(,"avg_ts":100,"samples_ts":[100,100.5]})" + "\n";
  }
  const std::string a = tmp_.File("a.jsonl"), b = tmp_.File("b.jsonl");
  std::ofstream(a) << lines;
  std::ofstream(b) << lines;
  auto r = RunCommand({MoetuneBinary(), "analyze", a, b}, 300);
  ExpectNoCrash(r, "analyze on 120000 results");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("more than 100000 results"), std::string::npos) << r.err;
}

TEST_F(HostileInput, ImpossibleSamplesAreRejectedWithTheFieldNamed) {
  const std::string jsonl = tmp_.File("impossible.jsonl");
  std::ofstream(jsonl)
      << R"({"n_prompt":512,"n_gen":0,"n_threads":4,"avg_ts":100,"samples_ts":[1e308,100]})"
      << "\n"
      << R"({"n_prompt":512,"n_gen":0,"n_threads":8,"avg_ts":100,"samples_ts":[-5,100]})"
      << "\n"
      << R"({"n_prompt":512,"n_gen":0,"n_threads":2,"avg_ts":100,"samples_ts":[100,101]})"
      << "\n";
  auto r = RunCommand({MoetuneBinary(), "analyze", jsonl}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("00000000000000000000"), std::string::npos) << r.out;
  // Said in the reading's notes (stdout), or on stderr.
  EXPECT_NE((r.out + r.err).find("2 entries skipped"), std::string::npos) << r.out << r.err;
}

TEST_F(HostileInput, AModelNameNeverForgesALineOrTurnsTextAround) {
  // general.name "Qwen3-30B-A3B" becomes a newline, a forged command and an
  // RLO (U+202E), at the same length so that the file stays valid.
  std::string bytes = Slurp(model_);
  const auto at = bytes.find("Qwen3-30B-A3B");
  ASSERT_NE(at, std::string::npos);
  const std::string hostile = "\nrm -rf ~\xE2\x80\xAE";  // 12 bytes
  ASSERT_EQ(hostile.size(), 12u);
  bytes.replace(at, hostile.size(), hostile);
  const std::string model = tmp_.File("named.gguf");
  std::ofstream(model, std::ios::binary) << bytes;
  std::vector<std::string> tune = {MoetuneBinary(), "tune",         model, "--ctx", "4K",
                                   "--no-journal",  "--no-progress"};
  tune.insert(tune.end(), kSim.begin(), kSim.end());
  for (const auto& argv : {std::vector<std::string>{MoetuneBinary(), "inspect", model}, tune}) {
    auto r = RunCommand(argv, 300);
    ASSERT_EQ(r.exit_code, 0) << argv[1] << ": " << r.err;
    EXPECT_EQ(r.out.find("\nrm -rf"), std::string::npos) << argv[1] << ": a forged line\n" << r.out;
    EXPECT_NE(r.out.find("\\nrm -rf ~\\u202e"), std::string::npos) << argv[1] << ":\n" << r.out;
    EXPECT_EQ(r.out.find("\xE2\x80\xAE"), std::string::npos) << argv[1];
  }
}

TEST_F(HostileInput, SimulatedBenchWritesItsReport) {
  const std::string report = tmp_.File("bench.md");
  auto r =
      RunCommand({MoetuneBinary(), "bench", model_, "--engine", "sim", "--machine",
                  "rtx4070-12g,ddr4-3200-2ch,8c16t", "-p", "512", "-n", "0", "--report", report},
                 300);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(report)) << "no report written";
  EXPECT_NE(Slurp(report).find("moetune simulated engine"), std::string::npos);
}

TEST_F(HostileInput, DoctorTakesTheNoDecodeFlagItsDocsList) {
  auto r = RunCommand({MoetuneBinary(), "doctor", "--model", model_, "--no-decode",
                       "--no-bandwidth", "--no-engine", "--no-save", "--json"},
                      300);
  EXPECT_NE(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find("--no-decode"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace moetune::itest
