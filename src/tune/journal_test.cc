#include "tune/journal.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "engine/result_json.h"
#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

RunResult Measured(int n, double tps) {
  RunResult r;
  r.config.model = "m.gguf";
  r.config.placement.n_cpu_moe = n;
  r.config.n_prompt = 512;
  r.config.repetitions = 3;
  r.samples_ts = {tps, tps + 1, tps - 1};
  r.avg_ts = tps;
  return r;
}

const JournalIdentity kId{"model A", "llama.cpp 0.7.0", "2 cpus"};

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(JournalTest, AppendThenResume) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE(j.ok()) << j.error().message();
    EXPECT_EQ((*j)->resumed(), 0u);
    ASSERT_TRUE((*j)->Append(Measured(3, 100)).ok());
    ASSERT_TRUE((*j)->Append(Measured(4, 90)).ok());
    ASSERT_TRUE((*j)->Append(Measured(3, 101)).ok());  // a second measurement of N=3
  }
  std::vector<std::string> notes;
  auto j = Journal::Open(path, kId, &notes);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)->resumed(), 3u);
  ASSERT_EQ(notes.size(), 1u);
  auto first = (*j)->Find(Measured(3, 0).config, 0);
  auto second = (*j)->Find(Measured(3, 0).config, 1);
  ASSERT_TRUE(first && second);
  EXPECT_DOUBLE_EQ(first->avg_ts, 100);
  EXPECT_DOUBLE_EQ(second->avg_ts, 101);
  EXPECT_FALSE((*j)->Find(Measured(3, 0).config, 2));
  EXPECT_FALSE((*j)->Find(Measured(5, 0).config, 0));
  // Failures are stored and found too.
  RunResult oom = Measured(1, 0);
  oom.samples_ts.clear();
  oom.failure = EngineFailure{FailureKind::kOutOfMemoryDevice, "out of memory", "exit code 1", {}};
  ASSERT_TRUE((*j)->Append(oom).ok());
  auto again = Journal::Open(path, kId);
  ASSERT_TRUE(again.ok());
  auto f = (*again)->Find(oom.config, 0);
  ASSERT_TRUE(f);
  ASSERT_FALSE(f->ok());
  EXPECT_EQ(f->failure->kind, FailureKind::kOutOfMemoryDevice);
}

TEST(JournalTest, AnotherModelEngineOrMachineIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  ASSERT_TRUE(Journal::Open(path, kId).ok());
  for (auto [id, field] : std::vector<std::pair<JournalIdentity, std::string>>{
           {{"model B", kId.engine, kId.machine}, "model"},
           {{kId.model, "sim seed=1", kId.machine}, "engine"},
           {{kId.model, kId.engine, "16 cpus"}, "machine"}}) {
    auto j = Journal::Open(path, id);
    ASSERT_FALSE(j.ok()) << field;
    EXPECT_NE(j.error().message().find("another " + field), std::string::npos)
        << j.error().message();
  }
}

TEST(JournalTest, TornRecordsAreSkippedCountedAndNeverExtended) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE((*j)->Append(Measured(3, 100)).ok());
  }
  const std::string torn = R"({"result":{"test":"pp512","n_cpu_moe":4,"samp)";
  std::ofstream(path, std::ios::app) << torn;
  std::vector<std::string> notes;
  auto j = Journal::Open(path, kId, &notes);
  ASSERT_TRUE(j.ok()) << j.error().message();
  EXPECT_EQ((*j)->resumed(), 1u);
  bool said = false;
  for (const auto& n : notes) said = said || n.find("1 record(s) torn") != std::string::npos;
  EXPECT_TRUE(said);
  // Only ever appended to: the torn bytes stay, the next record starts on a new line.
  ASSERT_TRUE((*j)->Append(Measured(4, 90)).ok());
  EXPECT_NE(Slurp(path).find(torn + "\n{\"at\""), std::string::npos) << Slurp(path);
  j->reset();
  auto again = Journal::Open(path, kId);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->resumed(), 2u);
}

TEST(JournalTest, AFileThatIsNotAJournalIsLeftExactlyAsItWas) {
  testing::TempDir dir;
  // A model-like binary file and a text without a newline: the torn-line
  // repair once cut both at their last newline before the header check.
  using namespace std::string_literals;
  std::string model = "GGUF\x03\x00\x00\x00binary\nstuff\x00\xff"s;
  for (int i = 0; i < 1000; ++i) model += static_cast<char>(i * 7);
  for (const std::string& bytes : {model, std::string("precious text without a newline")}) {
    const std::string path = dir.File("precious.bin");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    auto j = Journal::Open(path, kId);
    ASSERT_FALSE(j.ok());
    EXPECT_NE(j.error().message().find("not a moetune tune journal"), std::string::npos);
    EXPECT_EQ(Slurp(path), bytes);
  }
}

TEST(JournalTest, AnotherFormatVersionIsRefusedUntouched) {
  testing::TempDir dir;
  const std::string path = dir.File("v99.journal");
  const std::string text =
      R"({"moetune_journal": 99, "model": "model A", "engine": "llama.cpp 0.7.0", "machine": "2 cpus"})"
      "\n";
  std::ofstream(path) << text;
  auto j = Journal::Open(path, kId);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message().find("format version 99"), std::string::npos)
      << j.error().message();
  EXPECT_EQ(Slurp(path), text);
}

TEST(JournalTest, ASecondWriterIsToldWhoHoldsTheLock) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  ASSERT_TRUE(Journal::Open(path, kId).ok());
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // another tune holding the journal
    auto j = Journal::Open(path, kId);
    const char c = j.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    char wait = 0;
    (void)!::read(done[0], &wait, 1);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto j = Journal::Open(path, kId);
  (void)!::write(done[1], "x", 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message().find("in use by process " + std::to_string(child)),
            std::string::npos)
      << j.error().message();
  // Once it is gone, the journal opens again.
  EXPECT_TRUE(Journal::Open(path, kId).ok());
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
}

TEST(JournalTest, AnEngineKilledFromOutsideIsMeasuredAgain) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  RunResult killed = Measured(2, 0);
  killed.samples_ts.clear();
  killed.failure =
      EngineFailure{FailureKind::kCrash, "engine killed by signal 15", "signal 15", {}};
  killed.failure->signal = SIGTERM;
  RunResult segv = Measured(5, 0);
  segv.samples_ts.clear();
  segv.failure = EngineFailure{FailureKind::kCrash, "engine killed by signal 11", "signal 11", {}};
  segv.failure->signal = SIGSEGV;
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE((*j)->Append(killed).ok());
    ASSERT_TRUE((*j)->Append(segv).ok());
  }
  std::vector<std::string> notes;
  auto j = Journal::Open(path, kId, &notes);
  ASSERT_TRUE(j.ok());
  EXPECT_FALSE((*j)->Find(killed.config, 0)) << "a kill from outside was kept as a verdict";
  auto crash = (*j)->Find(segv.config, 0);
  ASSERT_TRUE(crash);  // a segfault is the configuration's own failure
  EXPECT_EQ(crash->failure->signal, SIGSEGV);
  bool said = false;
  for (const auto& n : notes)
    said = said || n.find("killed by a signal from outside") != std::string::npos;
  EXPECT_TRUE(said);
}

// A measurement whose RPC host died says nothing about the configuration:
// measured again on resume, and the host survives the journal's round trip.
TEST(JournalTest, AnRpcHostFailureIsMeasuredAgain) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  RunResult lost = Measured(3, 0);
  lost.samples_ts.clear();
  lost.failure = EngineFailure{
      FailureKind::kRpcHost, "RPC host 10.0.0.2:50052: connection refused", "signal 6", {}};
  lost.failure->rpc_host = "10.0.0.2:50052";
  RunResult json = RunResultFromJson(RunResultToJson(lost)).value();
  ASSERT_TRUE(json.failure);
  EXPECT_EQ(json.failure->kind, FailureKind::kRpcHost);
  EXPECT_EQ(json.failure->rpc_host, "10.0.0.2:50052");
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE((*j)->Append(lost).ok());
  }
  std::vector<std::string> notes;
  auto j = Journal::Open(path, kId, &notes);
  ASSERT_TRUE(j.ok());
  EXPECT_FALSE((*j)->Find(lost.config, 0)) << "an RPC host's failure was kept as a verdict";
}

// An RPC device that ran out of memory is a verdict on the placement, as a
// GPU's out-of-memory is: kept on resume, with its server.
TEST(JournalTest, AnRpcDeviceOutOfMemoryIsKeptAsAVerdict) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  RunResult oom = Measured(2, 0);
  oom.samples_ts.clear();
  oom.failure = EngineFailure{FailureKind::kOutOfMemoryDevice,
                              "the RPC device of ggml-rpc-server 10.0.0.2:50052 ran out of memory",
                              "exit code 1",
                              {}};
  oom.failure->rpc_host = "10.0.0.2:50052";
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE((*j)->Append(oom).ok());
  }
  auto j = Journal::Open(path, kId);
  ASSERT_TRUE(j.ok());
  const auto kept = (*j)->Find(oom.config, 0);
  ASSERT_TRUE(kept) << "an RPC device's out-of-memory was measured again";
  ASSERT_TRUE(kept->failure);
  EXPECT_EQ(kept->failure->kind, FailureKind::kOutOfMemoryDevice);
  EXPECT_EQ(kept->failure->rpc_host, "10.0.0.2:50052");
}

TEST(JournalTest, AFailedWriteLeavesNoTornRecordAndIsCounted) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  ASSERT_TRUE(Journal::Open(path, kId).ok());
  const std::string before = Slurp(path);
  // In a child: a file size limit just above the header (a full disk as far
  // as write(2) can tell), SIGXFSZ ignored so the write fails with EFBIG.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl {};
    rl.rlim_cur = rl.rlim_max = before.size() + 64;
    ::setrlimit(RLIMIT_FSIZE, &rl);
    auto j = Journal::Open(path, kId);
    if (!j.ok()) ::_exit(10);
    RunResult big = Measured(3, 100);
    big.samples_ts.assign(200, 100.0);
    const Status first = (*j)->Append(big);
    const Status second = (*j)->Append(big);
    if (first.ok() || second.ok()) ::_exit(11);
    if ((*j)->unsaved() != 2 || !(*j)->write_error()) ::_exit(12);
    if (first.error().message().find("File too large") == std::string::npos) ::_exit(13);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Slurp(path), before) << "a partial record was left behind";
}

TEST(JournalTest, AReadOnlyJournalIsReadAndSaysNothingIsSaved) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE((*j)->Append(Measured(3, 100)).ok());
  }
  const std::string before = Slurp(path);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0755), 0);
  // Root writes read-only files: drop to an unprivileged user in a child.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(20);
    std::vector<std::string> notes;
    auto j = Journal::Open(path, kId, &notes);
    if (!j.ok()) ::_exit(21);
    if (!(*j)->read_only() || (*j)->resumed() != 1) ::_exit(22);
    bool said = false;
    for (const auto& n : notes) said = said || n.find("read-only") != std::string::npos;
    if (!said) ::_exit(23);
    if (!(*j)->Append(Measured(4, 90)).ok() || !(*j)->Find(Measured(4, 0).config, 0)) ::_exit(24);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(Slurp(path), before);
}

TEST(JournalTest, NotAJournalIsRefused) {
  testing::TempDir dir;
  std::ofstream(dir.File("x.json")) << "{\"hello\": 1}\n";
  auto j = Journal::Open(dir.File("x.json"), kId);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message().find("not a moetune tune journal"), std::string::npos);
  auto d = Journal::Open(dir.path(), kId);
  ASSERT_FALSE(d.ok());
}

// The budget's record: written after the results, skipped by the reader (no
// result, not torn), counted, and the results around it still resume.
TEST(JournalTest, ABudgetRecordIsWrittenAndSkippedOnResume) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE(j.ok());
    ASSERT_TRUE((*j)->Append(Measured(3, 100)).ok());
    ASSERT_TRUE((*j)->AppendBudgetStop({"threads N=3 t=4 ub=512", 95, 40, 120, false}).ok());
  }
  const std::string text = Slurp(path);
  EXPECT_NE(text.find("\"kind\":\"budget\""), std::string::npos) << text;
  EXPECT_NE(text.find("threads N=3 t=4 ub=512"), std::string::npos) << text;
  {
    std::vector<std::string> notes;
    auto j = Journal::Open(path, kId, &notes);
    ASSERT_TRUE(j.ok());
    EXPECT_EQ((*j)->resumed(), 1u);
    EXPECT_EQ((*j)->budget_stops(), 1u);
    for (const auto& n : notes) EXPECT_EQ(n.find("torn"), std::string::npos) << n;
    EXPECT_TRUE((*j)->Find(Measured(3, 0).config, 0));
    ASSERT_TRUE((*j)->Append(Measured(4, 90)).ok());  // a resumed tune goes on
  }
  auto j = Journal::Open(path, kId);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)->resumed(), 2u);
  EXPECT_TRUE((*j)->Find(Measured(4, 0).config, 0));
}

}  // namespace
}  // namespace moetune
