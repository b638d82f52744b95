#include "watch/log_reader.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "util/temp_dir_test_util.h"
#include "watch/trace_test_util.h"

namespace moetune {
namespace {

using testing::WatchFixture;

TEST(LogReaderTest, ReadsARecordedSession) {
  // llama-server 0.7.0 (build 11669) serving a 12-turn conversation, with the
  // client's own per-request timings (/v1/chat/completions "timings") noted.
  auto log = ReadServerLog(WatchFixture("healthy-chat-t1.log"));
  ASSERT_TRUE(log.ok()) << log.error().message();
  EXPECT_EQ(log->sessions, 1);
  EXPECT_EQ(log->model_path, "tiny16k.gguf");
  EXPECT_EQ(log->n_slots, 1);
  EXPECT_EQ(log->n_ctx_slot, 8192);
  ASSERT_EQ(log->requests.size(), 12u);
  const LogRequest& r0 = log->requests[0];
  EXPECT_EQ(r0.prompt_tokens, 390);
  EXPECT_DOUBLE_EQ(r0.prompt_ms, 423.68);
  EXPECT_EQ(r0.generated_tokens, 48);
  EXPECT_NEAR(static_cast<double>(r0.prompt_tokens) / (r0.prompt_ms / 1e3), 920.5,
              0.1);  // the client saw 920.5
  // The server's own decode rate counts one token less: the first token comes
  // out of the prefill, so the generation time covers n - 1 steps. watch
  // reads the counters as /metrics exposes them (n tokens over that time),
  // live and from logs alike: 2% faster than the client's figure here.
  EXPECT_NEAR(static_cast<double>(r0.generated_tokens - 1) / (r0.generated_ms / 1e3), 370.5, 0.1);
  EXPECT_EQ(r0.n_tokens_end, 437);  // 390 + 48 - 1
  EXPECT_NEAR(*r0.time_s, 3.739, 0.01);
  const LogRequest& r1 = log->requests[1];
  EXPECT_EQ(r1.prompt_tokens, 409);
  const Observation o = r1.ToObservation(0);
  // 390 tokens were cached (the client saw cache_n 390): prefill from depth 390.
  ASSERT_TRUE(o.prefill && o.prefill->depth);
  EXPECT_DOUBLE_EQ(*o.prefill->depth, 390 + 409 / 2.0);
  ASSERT_TRUE(o.decode && o.decode->depth);
  EXPECT_DOUBLE_EQ(*o.decode->depth, 390 + 409 + 24);
  for (const auto& r : log->requests) EXPECT_FALSE(r.concurrent);
}

TEST(LogReaderTest, ParallelSlotsAreMarkedConcurrent) {
  auto log = ReadServerLog(WatchFixture("healthy-parallel-np2.log"));
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->n_slots, 2);
  ASSERT_EQ(log->requests.size(), 12u);
  int concurrent = 0;
  for (const auto& r : log->requests) concurrent += r.concurrent;
  EXPECT_GE(concurrent, 6);
}

TEST(LogReaderTest, OlderMultiLineFormatAndRestarts) {
  const std::string text =
      "main: HTTP server is listening, hostname: 127.0.0.1, port: 8080\n"
      "slot launch_slot_: id  0 | task 0 | processing task\n"
      "slot print_timing: id  0 | task 0 | \n"
      "prompt eval time =     148.53 ms /    11 tokens (   13.50 ms per token,    74.06 tokens "
      "per second)\n"
      "       eval time =     500.00 ms /    20 tokens (   25.00 ms per token,    40.00 tokens "
      "per second)\n"
      "      total time =     648.53 ms /    31 tokens\n"
      "slot      release: id  0 | task 0 | stop processing: n_past = 30, truncated = 0\n"
      "main: HTTP server is listening, hostname: 127.0.0.1, port: 8080\n"
      "slot print_timing: id  0 | task 0 | prompt eval time = 10.00 ms / 5 tokens (x)\n";
  const ServerLog log = ParseServerLog(text);
  EXPECT_EQ(log.sessions, 2);
  ASSERT_EQ(log.requests.size(), 2u);
  EXPECT_EQ(log.requests[0].prompt_tokens, 11);
  EXPECT_DOUBLE_EQ(log.requests[0].generated_ms, 500);
  EXPECT_EQ(log.requests[0].n_tokens_end, 30);
  EXPECT_EQ(log.requests[1].session, 2);
  EXPECT_FALSE(log.requests[1].n_tokens_end.has_value());  // no release line
  EXPECT_FALSE(log.requests[1].ToObservation(0).prefill->depth.has_value());
  EXPECT_EQ(log.notes.size(), 1u);
}

TEST(LogReaderTest, GeneratedLogReadsBackExactly) {
  const auto c = testing::Converse(testing::ChatTurns(5), testing::Healthy(900, 40, 4e4, 8e4));
  const ServerLog log = ParseServerLog(c.Log());
  const auto expected = c.PerRequest();
  ASSERT_EQ(log.requests.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const Observation o = log.requests[i].ToObservation(0);
    EXPECT_NEAR(o.prefill->rate(), expected[i].prefill->rate(), 0.01);
    EXPECT_DOUBLE_EQ(*o.prefill->depth, *expected[i].prefill->depth);
    EXPECT_DOUBLE_EQ(*o.decode->depth, *expected[i].decode->depth);
  }
}

TEST(LogReaderTest, RefusesWhatIsNotALogFile) {
  moetune::testing::TempDir dir;
  // A FIFO: refused before reading (opening it must not wait for a writer).
  const std::string fifo = dir.File("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = ReadServerLog(fifo);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("not a regular file"), std::string::npos);
  auto d = ReadServerLog(dir.path());
  ASSERT_FALSE(d.ok());
  // Binary data.
  const std::string bin = dir.File("model.gguf");
  {
    std::ofstream out(bin, std::ios::binary);
    out << "GGUF" << std::string(3, '\0') << "prompt eval time = 1 ms / 1 tokens\n";
  }
  auto b = ReadServerLog(bin);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("binary"), std::string::npos);
  EXPECT_NE(b.error().message().find("offset 4"), std::string::npos);
  // Over the size limit.
  auto big = ReadServerLog(WatchFixture("healthy-chat-t1.log"), LogReadOptions{1000});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("more than the 1000 bytes"), std::string::npos);
  // Text without any request.
  const std::string txt = dir.File("notes.txt");
  std::ofstream(txt) << "hello\nworld\n";
  auto t = ReadServerLog(txt);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("no llama-server request timing line"), std::string::npos);
  auto missing = ReadServerLog(dir.File("absent.log"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
}

TEST(LogReaderTest, VeryLongLinesAreCut) {
  moetune::testing::TempDir dir;
  const std::string p = dir.File("long.log");
  {
    std::ofstream out(p);
    out << std::string(300000, 'x') << "\n";
    out << "slot print_timing: id  0 | task 1 | prompt eval time = 10.00 ms / 100 tokens (x)\n";
    out << "slot release: id  0 | task 1 | stop processing: n_tokens = 150, truncated = 0\n";
  }
  auto log = ReadServerLog(p);
  ASSERT_TRUE(log.ok()) << log.error().message();
  ASSERT_EQ(log->requests.size(), 1u);
  EXPECT_EQ(log->requests[0].n_tokens_end, 150);
  ASSERT_FALSE(log->notes.empty());
  EXPECT_NE(log->notes.back().find("64 KiB"), std::string::npos);
}

TEST(LogReaderTest, HostileNumbersAreIgnored) {
  const ServerLog log = ParseServerLog(
      "slot print_timing: id  0 | task 1 | prompt eval time = -5 ms / 100 tokens\n"
      "slot print_timing: id  0 | task 2 | prompt eval time = 1e999 ms / 100 tokens\n"
      "slot print_timing: id  0 | task 3 | prompt eval time = 5 ms / 99999999999999999999 "
      "tokens\n"
      "slot print_timing: id 99999999999999999999 | task 4 | prompt eval time = 5 ms / 5 "
      "tokens\n");
  for (const auto& r : log.requests) EXPECT_GT(r.prompt_ms, 0);
}

TEST(LogReaderTest, ATimeOfNothingIsNoInfiniteSpeed) {
  // 0 ms is skipped; 1e-300 ms would be 390 / 1e-303 s: an infinite speed.
  const ServerLog log = ParseServerLog(
      "slot print_timing: id  0 | task 1 | prompt eval time = 1e-300 ms / 390 tokens\n"
      "slot print_timing: id  0 | task 1 |        eval time = 0.00 ms / 48 tokens\n"
      "slot      release: id  0 | task 1 | stop processing: n_tokens = 437, truncated = 0\n"
      "slot print_timing: id  0 | task 2 | prompt eval time = 0.0000001 ms / 390 tokens\n"
      "slot print_timing: id  0 | task 2 |        eval time = 126.85 ms / 48 tokens\n"
      "slot      release: id  0 | task 2 | stop processing: n_tokens = 437, truncated = 0\n");
  ASSERT_FALSE(log.requests.empty());
  for (const auto& r : log.requests) {
    const Observation o = r.ToObservation(0);
    EXPECT_FALSE(o.prefill.has_value()) << "prefill at " << o.prefill->rate() << " t/s";
    if (o.decode) {
      EXPECT_LT(o.decode->rate(), 1e9);
    }
  }
}

TEST(LogReaderTest, ALogOfServeCarriesItsCommand) {
  const std::vector<std::string> argv = {
      "/opt/llama server/llama-server", "-m", "m.gguf", "-ub", "256", "-ot",
      "blk\\.1\\.ffn_up_exps=CPU"};
  std::string text = ServeCommandLine(argv) + "\n";
  text +=
      testing::Converse(testing::ChatTurns(2, 600, 50), testing::Healthy(900, 40, 1e5, 1e5)).Log();
  text += std::string(kServeCommandTag) + "{\"not\": \"an array\"}\n";
  text += ServeCommandLine({"llama-server", "-m", "m.gguf", "--n-cpu-moe", "3"}) + "\n";
  const ServerLog log = ParseServerLog(text);
  ASSERT_EQ(log.commands.size(), 2u);
  EXPECT_EQ(log.commands[0], argv);
  EXPECT_EQ(log.commands[1].back(), "3");
  EXPECT_EQ(log.requests.size(), 2u);
  ASSERT_EQ(log.notes.size(), 1u);
  EXPECT_NE(log.notes[0].find("not a JSON array"), std::string::npos);
}

}  // namespace
}  // namespace moetune
