// Integration: llama-server lifecycle against the real engine; no orphan on
// any exit path, including SIGTERM to the process that started it.
#include "engine/server.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "engine/engine_info.h"
#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

bool ProcessGone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    if (text.empty()) return true;
    const auto close = text.rfind(')');
    if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return false;
}

class ServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->File("server model.gguf");
    const auto r = RunCommand(
        {MoetuneBinary(), "synth", "--preset", "qwen3moe", "--scale", "tiny", "-o", model_}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    DiscoveryOptions o;
    if (auto d = EngineDir()) o.llama_dir = d->string();
    auto info = DiscoverEngine(o);
    ASSERT_TRUE(info.ok()) << info.error().message();
    info_ = new EngineInfo(*info);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete info_;
  }
  void SetUp() override { ASSERT_NE(info_, nullptr); }
  void TearDown() override {
    for (int i = 0; i < 100 && !LiveDescendantsOf(::getpid()).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(LiveDescendantsOf(::getpid()).empty());
    EXPECT_EQ(LiveChildGroupCount(), 0);
  }
  ServerOptions Options() const {
    ServerOptions o;
    o.model = model_;
    o.placement.ctx_size = 1024;
    o.threads = 1;
    o.health_timeout = std::chrono::milliseconds(120000);
    return o;
  }
  static TempDir* dir_;
  static std::string model_;
  static EngineInfo* info_;
};

TempDir* ServerTest::dir_ = nullptr;
std::string ServerTest::model_;
EngineInfo* ServerTest::info_ = nullptr;

TEST_F(ServerTest, StartCompleteStop) {
  auto server = LlamaServer::Start(*info_, Options());
  ASSERT_TRUE(server.ok()) << server.error().message();
  const pid_t pid = (*server)->pid();
  EXPECT_GT((*server)->port(), 0);
  auto t = (*server)->Complete("The quick brown fox jumps over the lazy dog", 8);
  ASSERT_TRUE(t.ok()) << t.error().message();
  EXPECT_EQ(t->predicted_n, 8);
  EXPECT_GT(t->prompt_n, 0);
  EXPECT_GT(t->prompt_per_second, 0);
  EXPECT_GT(t->predicted_per_second, 0);
  EXPECT_GT(t->ttft_ms, 0);
  EXPECT_GE(t->wall_ms, t->prompt_ms);
  // Prompt cache is off: a second identical request measures prefill again.
  auto t2 = (*server)->Complete("The quick brown fox jumps over the lazy dog", 4);
  ASSERT_TRUE(t2.ok()) << t2.error().message();
  EXPECT_EQ(t2->cache_n, 0);
  const ExitStatus st = (*server)->Stop();
  EXPECT_TRUE(st.exited || st.signal == SIGTERM) << st.Describe();
  EXPECT_TRUE(ProcessGone(pid));
}

TEST_F(ServerTest, BadModelFailsWithTheEnginesMessage) {
  const std::string bad = dir_->File("bad.gguf");
  std::ofstream(bad) << "not a gguf file at all";
  ServerOptions o = Options();
  o.model = bad;
  auto server = LlamaServer::Start(*info_, o);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.error().message().find("model_load"), std::string::npos)
      << server.error().message();
}

TEST_F(ServerTest, HealthTimeoutStopsTheServer) {
  ServerOptions o = Options();
  o.health_timeout = std::chrono::milliseconds(1);
  auto server = LlamaServer::Start(*info_, o);
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.error().message().find("timeout"), std::string::npos)
      << server.error().message();
}

TEST_F(ServerTest, DestructorStopsTheServer) {
  pid_t pid = -1;
  {
    auto server = LlamaServer::Start(*info_, Options());
    ASSERT_TRUE(server.ok()) << server.error().message();
    pid = (*server)->pid();
  }
  EXPECT_TRUE(ProcessGone(pid));
}

TEST_F(ServerTest, SigtermToTheParentKillsTheServer) {
  // "fast" (fork without re-exec) keeps this process's model and temp folder in the child.
  GTEST_FLAG_SET(death_test_style, "fast");
  const std::string pid_file = dir_->File("server.pid");
  const ServerOptions o = Options();
  const EngineInfo info = *info_;
  auto body = [&] {
    InstallChildCleanupOnSignals();
    auto server = LlamaServer::Start(info, o);
    if (!server.ok()) std::_Exit(3);
    { std::ofstream(pid_file) << (*server)->pid() << "\n"; }
    ::raise(SIGTERM);
    std::_Exit(4);
  };
  EXPECT_EXIT(body(), ::testing::KilledBySignal(SIGTERM), "");
  pid_t pid = -1;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(ProcessGone(pid));
}

}  // namespace
}  // namespace moetune::itest
