// The real llama.cpp over an RPC device on emulated network links (issue 20,
// item 5): ggml-rpc-server in a network namespace of its own behind a veth
// pair shaped by tbf (emulated_link.h). First the link itself: made, shaped
// on both ends, served, and removed with nothing left behind.

#include <algorithm>
#include <string>

#include "emulated_link.h"
#include "support.h"
#include "util/child_cleanup.h"

namespace moetune::itest {
namespace {

class RpcLinksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto engine = EngineDir();
    ASSERT_TRUE(engine.has_value())
        << "llama.cpp not found: run scripts/setup-engine.sh or set MOETUNE_LLAMA_DIR";
    engine_ = *engine;
  }
  void TearDown() override {
    EXPECT_TRUE(LeftoverDescendants().empty());
    EXPECT_EQ(LiveChildGroupCount(), 0);
  }
  std::filesystem::path engine_;
};

TEST_F(RpcLinksTest, TheLinkIsMadeShapedAndRemoved) {
  std::string netns, host_if;
  pid_t server = -1;
  {
    EmulatedLink link(engine_, 1.0);
    ASSERT_TRUE(link.ok()) << link.error();
    netns = link.netns();
    host_if = link.host_interface();
    server = link.server_pid();
    const auto names = EmulatedLinkNamespaces();
    EXPECT_NE(std::find(names.begin(), names.end(), netns), names.end());
    EXPECT_TRUE(InterfaceExists(host_if));
    EXPECT_EQ(link.burst_bytes(), 64 * 1024);
    const std::string shown = NetToolOutput("tc", {"qdisc", "show", "dev", host_if});
    EXPECT_NE(shown.find("tbf"), std::string::npos) << shown;
    EXPECT_NE(shown.find("rate 1Gbit"), std::string::npos) << shown;
    const std::string inside = NetToolOutput("tc", {"-n", netns, "qdisc", "show"});
    EXPECT_NE(inside.find("rate 1Gbit"), std::string::npos) << inside;
    EXPECT_FALSE(ProcessGone(server, 0.1));
    // In 198.18.0.0/15.
    EXPECT_TRUE(link.endpoint().rfind("198.18.", 0) == 0 ||
                link.endpoint().rfind("198.19.", 0) == 0)
        << link.endpoint();
  }
  EXPECT_TRUE(ProcessGone(server));
  EXPECT_FALSE(InterfaceExists(host_if));
  const auto names = EmulatedLinkNamespaces();
  EXPECT_EQ(std::find(names.begin(), names.end(), netns), names.end());
}

}  // namespace
}  // namespace moetune::itest
