// Integration: the one rule for every file a command writes (outputs, reports,
// the journal, the machine profile, server logs), through the real binary:
// never an input, never another output of the same command, never a FIFO it
// would block on; an existing journal is checked before anything is written
// and only ever appended to, locked while a tune uses it, and a disk that
// fills up is reported with an exit code. A model given as a FIFO is refused
// without waiting for a writer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "support.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FileRules : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->File("m.gguf");
    auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    bytes_ = new std::string(Slurp(model_));
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete bytes_;
  }
  void SetUp() override { ASSERT_NE(bytes_, nullptr); }
  void TearDown() override { EXPECT_TRUE(Slurp(model_) == *bytes_) << "the model was changed"; }
  // A simulated tune of the model (seconds of work), plus `extra` flags.
  static std::vector<std::string> Tune(std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        MoetuneBinary(), "tune",      model_,
        "--ctx",         "4K",        "--engine",
        "sim",           "--machine", "rtx4070-12g,ddr4-3200-2ch,8c16t",
        "--no-progress"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  TempDir tmp_;
  static TempDir* dir_;
  static std::string model_;
  static std::string* bytes_;
};

TempDir* FileRules::dir_ = nullptr;
std::string FileRules::model_;
std::string* FileRules::bytes_ = nullptr;

TEST_F(FileRules, AJournalOnTheModelLeavesTheModelWhole) {
  auto r = RunCommand(Tune({"--journal", model_}), 300);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--journal"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the model"), std::string::npos) << r.err;
}

TEST_F(FileRules, AJournalOnAnyOtherFileLeavesItWhole) {
  const std::string precious = tmp_.File("precious.bin");
  std::ofstream(precious, std::ios::binary) << "a file without a newline, not a journal";
  auto r = RunCommand(Tune({"--journal", precious}), 300);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("not a moetune tune journal"), std::string::npos) << r.err;
  EXPECT_EQ(Slurp(precious), "a file without a newline, not a journal");
}

TEST_F(FileRules, DoctorNeverSavesItsProfileOverTheModel) {
  const std::string link = tmp_.File("profile.json");
  fs::create_symlink(model_, link);
  for (const std::string& profile : {model_, link}) {
    auto r = RunCommand({MoetuneBinary(), "doctor", "--model", model_, "--profile", profile,
                         "--no-bandwidth", "--no-engine", "--no-decode"},
                        300);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("--profile"), std::string::npos) << r.err;
  }
}

TEST_F(FileRules, TwoOutputsOfOneCommandNeverShareAFile) {
  const std::string journal = tmp_.File("j.jsonl");
  ASSERT_EQ(RunCommand(Tune({"--journal", journal, "--budget", "0.1"}), 300).exit_code, 0);
  const std::string before = Slurp(journal);
  auto r = RunCommand(Tune({"--journal", journal, "--json", "-o", journal}), 300);
  EXPECT_EQ(r.exit_code, 2) << r.err;  // a bad command line, refused before any work
  EXPECT_NE(r.err.find("-o"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--journal"), std::string::npos) << r.err;
  EXPECT_EQ(Slurp(journal), before);
  auto again = RunCommand(Tune({"--journal", journal, "--json"}), 300);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_GT(json::parse(again.out)["resumed"].get<int>(), 0);

  const std::string report = tmp_.File("r.html");
  r = RunCommand(Tune({"--no-journal", "--report", report, "-o", report}), 300);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--report"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(report));
}

TEST_F(FileRules, ASecondTuneIsToldWhoHoldsTheJournal) {
  const std::string journal = tmp_.File("held.journal");
  ASSERT_EQ(RunCommand(Tune({"--journal", journal, "--budget", "0.1"}), 300).exit_code, 0);
  const std::string before = Slurp(journal);
  // This test process holds the journal's lock, as a running tune would.
  const int fd = ::open(journal.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(fd, F_SETLK, &fl), 0);
  auto r = RunCommand(Tune({"--journal", journal}), 300);
  ::close(fd);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("in use by process " + std::to_string(::getpid())), std::string::npos)
      << r.err;
  EXPECT_EQ(Slurp(journal), before);
}

TEST_F(FileRules, AJournalOfAModelWithOtherHyperparametersIsNotResumed) {
  // The same file name, size and tensors, another expert_used_count.
  std::string patched = *bytes_;
  const std::string key = "qwen3moe.expert_used_count";
  const auto at = patched.find(key);
  ASSERT_NE(at, std::string::npos);
  const std::size_t value = at + key.size() + 4;  // after the u32 type tag
  uint32_t used = 0;
  std::memcpy(&used, patched.data() + value, 4);
  ASSERT_GT(used, 1u);
  const uint32_t fewer = used / 2;
  std::memcpy(patched.data() + value, &fewer, 4);
  const std::string journal = tmp_.File("shared.journal");
  const std::string model = tmp_.File("m.gguf");
  std::ofstream(model, std::ios::binary) << *bytes_;
  std::vector<std::string> argv = Tune({"--journal", journal, "--json"});
  argv[2] = model;
  ASSERT_EQ(RunCommand(argv, 300).exit_code, 0);
  std::ofstream(model, std::ios::binary | std::ios::trunc) << patched;
  auto r = RunCommand(argv, 300);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("written for another model"), std::string::npos) << r.err;
}

TEST_F(FileRules, AFullDiskIsSaidAndIsInTheExitCode) {
  const std::string journal = tmp_.File("full.journal");
  // A file size limit stands in for a full disk (write(2) fails the same
  // way); SIGXFSZ ignored so that the write fails instead of killing.
  const std::string cmd =
      "trap '' XFSZ; ulimit -f 4; exec \"$@\"";  // 4 blocks: the header and a few records
  std::vector<std::string> argv = {"/bin/sh", "-c", cmd, "sh"};
  for (const auto& a : Tune({"--journal", journal, "--json"})) argv.push_back(a);
  auto r = RunCommand(argv, 300);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("were not saved to the journal"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  // The result was still printed, and every line of the journal is whole.
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  // Said once, not once per measurement.
  int notes = 0;
  for (const auto& n : out["notes"]) {
    notes += n.get<std::string>().find("journal: cannot append") != std::string::npos;
  }
  EXPECT_EQ(notes, 1) << out["notes"].dump(1);
  std::ifstream in(journal);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_FALSE(json::parse(line, nullptr, false).is_discarded()) << "torn: " << line;
  }
  EXPECT_GE(lines, 1);
  EXPECT_EQ(Slurp(journal).back(), '\n');
}

TEST_F(FileRules, AModelThatIsAFifoIsRefusedWithoutWaiting) {
  const std::string fifo = tmp_.File("f.gguf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{MoetuneBinary(), "inspect", fifo},
        std::vector<std::string>{MoetuneBinary(), "plan", fifo, "--vram", "12GiB"}}) {
    const std::string& command = argv[1];
    auto r = RunCommand(argv, 60);
    EXPECT_FALSE(r.timed_out) << command << " waited for a writer";
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.err;
    EXPECT_NE(r.err.find("named pipe"), std::string::npos) << r.err;
  }
}

TEST_F(FileRules, AServerLogIsNeverAnInputOrAPipe) {
  ASSERT_TRUE(EngineDir().has_value()) << "llama.cpp not found";
  const std::string fifo = tmp_.File("log.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& log : {model_, fifo}) {
    auto r =
        RunCommand({MoetuneBinary(), "serve", model_, "--ctx", "1024", "--port",
                    std::to_string(FreePort()), "--server-log", log, "--no-gpu", "--vram", "8GiB"},
                   120);
    EXPECT_FALSE(r.timed_out) << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("--server-log"), std::string::npos) << r.err;
  }
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

}  // namespace
}  // namespace moetune::itest
