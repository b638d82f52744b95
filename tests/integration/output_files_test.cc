// Integration: output files through the real moetune binary. A terminating
// signal while `synth` writes leaves neither a partial model nor its temporary;
// `-o` never replaces an input, a device node or a FIFO; errors quote the
// operating system's reason.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

namespace fs = std::filesystem;

int TempLeftovers(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  }
  return n;
}

class InterruptedSynth : public ::testing::TestWithParam<int> {};

TEST_P(InterruptedSynth, LeavesNoTemporaryAndNoModel) {
  TempDir dir;
  const std::string out = dir.File("big.gguf");
  SpawnOptions s;
  // A few hundred MiB: long enough to be interrupted in the middle of the write.
  s.argv = {MoetuneBinary(), "synth",    "--preset", "qwen3moe", "--scale",
            "small",         "--layers", "24",       "-o",       out};
  s.stdout_mode = OutputMode::kDiscard;
  s.stderr_mode = OutputMode::kDiscard;
  auto child = ChildProcess::Spawn(s);
  ASSERT_TRUE(child.ok()) << child.error().message();
  // Wait until the temporary exists and has data, then interrupt.
  bool writing = false;
  for (int i = 0; i < 400 && !writing; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (const auto& e : fs::directory_iterator(dir.path())) {
      if (e.path().filename().string().find(".tmp.") != std::string::npos &&
          fs::file_size(e.path()) > 0)
        writing = true;
    }
  }
  ASSERT_TRUE(writing) << "synth never started writing";
  ::kill((*child)->pid(), GetParam());
  std::optional<ExitStatus> st;
  for (int i = 0; i < 400 && !st; ++i) {
    st = (*child)->Poll();
    if (!st) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(st.has_value()) << "moetune did not exit on signal " << GetParam();
  EXPECT_EQ(st->signal, GetParam()) << st->Describe();
  EXPECT_EQ(TempLeftovers(dir.path()), 0) << "a temporary survived signal " << GetParam();
  EXPECT_FALSE(fs::exists(out)) << "an incomplete model was left as if complete";
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptedSynth, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& p) { return SignalName(p.param); });

class OutputRules : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = dir_.File("m.gguf");
    auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    size_ = fs::file_size(model_);
  }
  TempDir dir_;
  std::string model_;
  uintmax_t size_ = 0;
};

TEST_F(OutputRules, InspectRefusesToOverwriteItsInput) {
  auto r = RunCommand({MoetuneBinary(), "inspect", model_, "-o", model_}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is the input"), std::string::npos) << r.err;
  EXPECT_EQ(fs::file_size(model_), size_);
  // Through a symbolic link too.
  const std::string link = dir_.File("alias.gguf");
  fs::create_symlink(model_, link);
  r = RunCommand({MoetuneBinary(), "inspect", model_, "-o", link}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(fs::file_size(model_), size_);
}

TEST_F(OutputRules, DeviceNodeIsWrittenThrough) {
  auto r = RunCommand({MoetuneBinary(), "inspect", model_, "--json", "-o", "/dev/null"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null was replaced";
}

TEST_F(OutputRules, FullDiskIsReportedAsSuch) {
  auto r = RunCommand({MoetuneBinary(), "inspect", model_, "--json", "-o", "/dev/full"}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
}

TEST_F(OutputRules, FolderIsRefusedWithAClearMessage) {
  auto r = RunCommand({MoetuneBinary(), "inspect", model_, "-o", dir_.path().string() + "/"}, 60);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.find("Success"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("folder"), std::string::npos) << r.err;
  EXPECT_EQ(TempLeftovers(dir_.path()), 0);
}

TEST_F(OutputRules, FifoWithoutReaderIsRefusedWithoutHanging) {
  const std::string fifo = dir_.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = RunCommand({MoetuneBinary(), "inspect", model_, "-o", fifo}, 60);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no reader"), std::string::npos) << r.err;
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
}

}  // namespace
}  // namespace moetune::itest
