#include "watch/process_info.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

TEST(ProcessInfoTest, ParsesStatWithAHostileCommandName) {
  // The command name may hold spaces and ')'; fields count from the last ')'.
  const std::string stat =
      "31683 (ld-linux) (x y) S 1 31680 27658 0 -1 4194304 19712 137 2 0 1363 10 0 0 20 0 10 0 "
      "988557 693321728 27441 18446744073709551615";
  auto s = ParseProcStat(stat);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, 31683);
  EXPECT_EQ(s->comm, "ld-linux) (x y");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->minor_faults, 19712);
  EXPECT_EQ(s->major_faults, 2);
  EXPECT_EQ(s->start_ticks, 988557u);
  EXPECT_FALSE(ParseProcStat("garbage").has_value());
  EXPECT_FALSE(ParseProcStat("12 (x) S 1 2").has_value());
}

TEST(ProcessInfoTest, ReadsThisProcess) {
  auto s = ReadProcessSample(SysRoot("/"), ::getpid());
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->pid, ::getpid());
  EXPECT_GT(s->rss_bytes, 0);
  EXPECT_GT(s->start_ticks, 0u);
  EXPECT_FALSE(ReadProcessSample(SysRoot("/"), 0).has_value());
  const auto argv = ReadCmdline(SysRoot("/"), ::getpid());
  ASSERT_FALSE(argv.empty());
  EXPECT_NE(argv[0].find("moetune_tests"), std::string::npos);
}

TEST(ProcessInfoTest, ReadsFixtureTrees) {
  testing::TempDir dir;
  const std::string p = dir.path() + "/proc/4242";
  std::filesystem::create_directories(p);
  std::ofstream(p + "/stat") << "4242 (llama-server) R 1 1 1 0 -1 0 5 0 77 0 0 0 0 0 20 0 1 0 "
                                "1234 100 200 0\n";
  std::ofstream(p + "/status") << "Name:\tllama-server\nVmRSS:\t  2048 kB\nRssAnon:\t 1024 kB\n"
                                  "RssFile:\t 1000 kB\n";
  std::string env = std::string("PATH=/bin") + '\0' + "LLAMA_ARG_N_CPU_MOE=12" + '\0' +
                    "LLAMA_ARG_CTX_SIZE=32768" + '\0' + "LLAMA_ARG_X" + '\0';
  std::ofstream(p + "/environ") << env;
  std::string cmd = std::string("llama-server") + '\0' + "-m" + '\0' + "m.gguf" + '\0';
  std::ofstream(p + "/cmdline") << cmd;
  const SysRoot root(dir.path());
  auto s = ReadProcessSample(root, 4242);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->major_faults, 77);
  EXPECT_EQ(s->rss_bytes, 2048 * 1024);
  EXPECT_EQ(s->rss_file_bytes, 1000 * 1024);
  const auto e = ReadLlamaEnv(root, 4242);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].first, "LLAMA_ARG_N_CPU_MOE");
  EXPECT_EQ(e[1].second, "32768");
  EXPECT_EQ(ReadCmdline(root, 4242), (std::vector<std::string>{"llama-server", "-m", "m.gguf"}));
}

TEST(ProcessInfoTest, ListeningInodesFromProcNetTcp) {
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
      "timeout inode\n"
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        "
      "0 55501 1 0000000000000000 100 0 0 10 0\n"
      "   1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        "
      "0 55502 1 0000000000000000 100 0 0 10 0\n"
      "   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        "
      "0 55503 1 0000000000000000 100 0 0 10 0\n";
  EXPECT_EQ(ListeningInodes(tcp, 8080), std::vector<uint64_t>{55501});  // not the connection
  EXPECT_EQ(ListeningInodes(tcp, 80), std::vector<uint64_t>{55503});
  EXPECT_TRUE(ListeningInodes(tcp, 81).empty());
  EXPECT_TRUE(ListeningInodes("junk", 80).empty());
}

TEST(ProcessInfoTest, FindsTheProcessListeningOnAPort) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  EXPECT_EQ(FindListeningPid(SysRoot("/"), port), ::getpid());
  ::close(fd);
  EXPECT_FALSE(FindListeningPid(SysRoot("/"), port).has_value());
}

}  // namespace
}  // namespace moetune
