// Integration: `moetune demo` runs the main job end to end on the real engine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "support.h"
#include "util/subprocess.h"

namespace moetune::itest {
namespace {

TEST(DemoTest, CompletesWithASummary) {
  TempDir dir;
  std::vector<std::string> argv = {MoetuneBinary(), "demo", "--dir", dir.File("demo"), "-r", "2"};
  if (auto d = EngineDir()) argv.insert(argv.end(), {"--llama-dir", d->string()});
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = RunCommand(argv, 900);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("## 6. Summary"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest pp64"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fastest tg16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Host model"), std::string::npos) << r.out;  // the engine's dry run
  EXPECT_NE(r.out.find("0 failed"), std::string::npos) << r.out;
  EXPECT_LT(secs, 300);  // "a few minutes on 2 cores"
  for (int i = 0; i < 100 && !LiveDescendantsOf(::getpid()).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(LiveDescendantsOf(::getpid()).empty());
}

}  // namespace
}  // namespace moetune::itest
