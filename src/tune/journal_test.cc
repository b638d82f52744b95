#include "tune/journal.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "util/test_temp_dir.h"

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

TEST(JournalTest, TornLastLineIsDropped) {
  testing::TempDir dir;
  const std::string path = dir.File("tune.journal");
  {
    auto j = Journal::Open(path, kId);
    ASSERT_TRUE((*j)->Append(Measured(3, 100)).ok());
  }
  std::ofstream(path, std::ios::app) << R"({"result":{"test":"pp512","n_cpu_moe":4,"samp)";
  std::vector<std::string> notes;
  auto j = Journal::Open(path, kId, &notes);
  ASSERT_TRUE(j.ok()) << j.error().message();
  EXPECT_EQ((*j)->resumed(), 1u);
  ASSERT_TRUE((*j)->Append(Measured(4, 90)).ok());
  auto again = Journal::Open(path, kId);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->resumed(), 2u);
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

}  // namespace
}  // namespace moetune
