#include "engine/rpc_host.h"

#include <gtest/gtest.h>

#include <chrono>

#include "engine/rpc_host_test_util.h"
#include "engine/server_test_util.h"

namespace moetune {
namespace {

using testing::BlackholeHost;
using testing::FakeRpcHost;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kShort{1500};

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

TEST(RpcEndpointTest, ParsesHostAndPortAndRefusesTheRest) {
  auto v4 = ParseRpcEndpoint("10.0.0.2:50052");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "10.0.0.2");
  EXPECT_EQ(v4->port, 50052);
  auto v6 = ParseRpcEndpoint("[fe80::1]:7");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "fe80::1");
  EXPECT_EQ(v6->port, 7);
  for (const char* bad : {"", "host", "host:", ":50052", "host:0", "host:65536", "host:5x",
                          "fe80::1:50052", "[]:1", "h:99999999999"}) {
    auto r = ParseRpcEndpoint(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message().find("HOST:PORT"), std::string::npos) << bad;
    }
  }
}

TEST(RpcEndpointTest, ListSkipsEmptyEntriesAndNamesABadOne) {
  auto l = ParseRpcList("a:1,,b:2,");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (std::vector<std::string>{"a:1", "b:2"}));
  auto bad = ParseRpcList("a:1,b");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'b'"), std::string::npos) << bad.error().message();
}

TEST(RpcHostCheckTest, AServerThatAnswersTheHelloPassesWithItsVersion) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kHello);
  const RpcHostCheck c = CheckRpcHost(host.endpoint(), kShort);
  EXPECT_TRUE(c.ok()) << DescribeRpcHostProblem(c);
  EXPECT_EQ(c.major, 8);
  EXPECT_EQ(c.minor, 0);
  EXPECT_TRUE(CheckRpcHosts({host.endpoint()}, kShort).ok());
}

TEST(RpcHostCheckTest, NothingListeningIsRefusedByNameWithTheCommandToStart) {
  auto port = FindFreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string ep = "127.0.0.1:" + std::to_string(*port);
  const RpcHostCheck c = CheckRpcHost(ep, kShort);
  EXPECT_EQ(c.problem, RpcHostProblem::kRefused);
  const Status st = CheckRpcHosts({ep}, kShort);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("RPC host " + ep), std::string::npos);
  EXPECT_NE(st.error().message().find("ggml-rpc-server -H 127.0.0.1 -p " + std::to_string(*port)),
            std::string::npos)
      << st.error().message();
}

TEST(RpcHostCheckTest, ABlackholeAddressCostsTheTimeoutNotMinutes) {
  BlackholeHost hole;
  ASSERT_TRUE(hole.ok());
  const auto t0 = Clock::now();
  const RpcHostCheck c = CheckRpcHost(hole.endpoint(), kShort);
  const double took = SecondsSince(t0);
  EXPECT_EQ(c.problem, RpcHostProblem::kNoConnection) << DescribeRpcHostProblem(c);
  EXPECT_LT(took, 5.0);
  EXPECT_NE(DescribeRpcHostProblem(c).find("within 1.5 s"), std::string::npos)
      << DescribeRpcHostProblem(c);
}

TEST(RpcHostCheckTest, GarbageIsNamedWithWhatTheHostSaid) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kGarbage);
  const RpcHostCheck c = CheckRpcHost(host.endpoint(), kShort);
  EXPECT_EQ(c.problem, RpcHostProblem::kGarbage);
  const std::string text = DescribeRpcHostProblem(c);
  EXPECT_NE(text.find(host.endpoint()), std::string::npos) << text;
  EXPECT_NE(text.find("HTTP/1.1 400"), std::string::npos) << text;
}

TEST(RpcHostCheckTest, ASilentHostFailsAtTheTimeout) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kSilent);
  const auto t0 = Clock::now();
  const RpcHostCheck c = CheckRpcHost(host.endpoint(), kShort);
  EXPECT_EQ(c.problem, RpcHostProblem::kSilent);
  EXPECT_LT(SecondsSince(t0), 5.0);
  EXPECT_NE(DescribeRpcHostProblem(c).find("did not answer the hello"), std::string::npos);
}

TEST(RpcHostCheckTest, AHostThatClosesTriesEveryLayoutThenSaysSo) {
  FakeRpcHost host(FakeRpcHost::Behaviour::kClose);
  const RpcHostCheck c = CheckRpcHost(host.endpoint(), kShort);
  EXPECT_EQ(c.problem, RpcHostProblem::kClosed);
  EXPECT_EQ(host.connections(), 3);  // the three hello layouts
}

TEST(RpcHostCheckTest, TheFirstFailingHostIsNamed) {
  FakeRpcHost good(FakeRpcHost::Behaviour::kHello);
  FakeRpcHost bad(FakeRpcHost::Behaviour::kGarbage);
  const auto c = FirstFailingRpcHost({good.endpoint(), bad.endpoint()}, kShort);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->endpoint, bad.endpoint());
  EXPECT_FALSE(FirstFailingRpcHost({good.endpoint()}, kShort).has_value());
}

TEST(RpcFailureTest, ACrashWhileAHostIsDownNamesTheHost) {
  FakeRpcHost good(FakeRpcHost::Behaviour::kHello);
  auto port = FindFreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string down = "127.0.0.1:" + std::to_string(*port);
  EngineFailure f{FailureKind::kCrash, "engine killed by signal 6 (SIGABRT)", "signal 6", {}};
  AttributeRpcFailure({good.endpoint(), down}, &f, kShort);
  EXPECT_EQ(f.kind, FailureKind::kRpcHost);
  EXPECT_EQ(f.rpc_host, down);
  EXPECT_NE(f.message.find("connection refused"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("SIGABRT"), std::string::npos) << f.message;
}

TEST(RpcFailureTest, OutOfMemoryIsLeftAloneAndAnswersHostsAreNotBlamed) {
  auto port = FindFreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string down = "127.0.0.1:" + std::to_string(*port);
  EngineFailure oom{FailureKind::kOutOfMemoryDevice, "cudaMalloc failed", "exit code 1", {}};
  AttributeRpcFailure({down}, &oom, kShort);
  EXPECT_EQ(oom.kind, FailureKind::kOutOfMemoryDevice);
  EXPECT_TRUE(oom.rpc_host.empty());

  FakeRpcHost good(FakeRpcHost::Behaviour::kHello);
  EngineFailure crash{FailureKind::kCrash, "engine killed by signal 11", "signal 11", {}};
  AttributeRpcFailure({good.endpoint()}, &crash, kShort);
  EXPECT_EQ(crash.kind, FailureKind::kCrash);
  // The engine's RPC error with the one host answering again: that host.
  EngineFailure rpc{FailureKind::kRpcHost, "Remote RPC server crashed", "signal 6", {}};
  AttributeRpcFailure({good.endpoint()}, &rpc, kShort);
  EXPECT_EQ(rpc.rpc_host, good.endpoint());
}

TEST(RpcServerArgvTest, BindsToTheHostAndPortOfTheEntry) {
  auto argv = RpcServerArgv("192.168.1.20:50052");
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(*argv,
            (std::vector<std::string>{"ggml-rpc-server", "-H", "192.168.1.20", "-p", "50052"}));
  EXPECT_FALSE(RpcServerArgv("nonsense").ok());
}

}  // namespace
}  // namespace moetune
