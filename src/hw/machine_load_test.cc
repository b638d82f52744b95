#include "hw/machine_load.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

TEST(MachineLoad, ReadsTheCpuLineOfProcStat) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.File("proc"));
  const long hz = sysconf(_SC_CLK_TCK);
  // user nice system idle iowait irq softirq steal guest guest_nice
  std::ofstream(dir.File("proc/stat")) << "cpu  100 0 50 800 40 5 5 0 0 0\ncpu0 1 2 3\n";
  const auto c = ReadCpuClock(SysRoot(dir.path()));
  ASSERT_TRUE(c.has_value());
  EXPECT_DOUBLE_EQ(c->busy_seconds, 160.0 / static_cast<double>(hz));
  EXPECT_DOUBLE_EQ(c->total_seconds, 1000.0 / static_cast<double>(hz));
  for (const char* bad : {"", "intr 1 2 3\n", "cpu  1 2\n", "cpu  1 2 -3 4 5\n"}) {
    std::ofstream(dir.File("proc/stat")) << bad;
    EXPECT_FALSE(ReadCpuClock(SysRoot(dir.path())).has_value()) << bad;
  }
}

// A process that is not ours (nor a child waited for) keeping a core busy is
// seen as other processes' load; the text names it.
TEST(MachineLoad, ABusyProcessIsSeen) {
  const pid_t spinner = fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    volatile unsigned long x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
    _exit(0);
  }
  const auto load = SampleLoad(1.0);
  kill(spinner, SIGKILL);
  waitpid(spinner, nullptr, 0);
  ASSERT_TRUE(load.has_value());
  EXPECT_GT(load->other_cores, 0.5) << MachineLoadText(*load);
  EXPECT_TRUE(IsBusy(*load));
  EXPECT_NE(MachineLoadText(*load).find("other processes used"), std::string::npos);
  // Waiting for quiet is bounded: one window when the budget is smaller.
  const auto t0 = std::chrono::steady_clock::now();
  const QuietWait w = WaitForQuiet(0.1, 0.2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  ASSERT_TRUE(w.last.has_value());
}

}  // namespace
}  // namespace moetune
