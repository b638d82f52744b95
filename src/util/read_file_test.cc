#include "util/read_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace moetune {
namespace {

TEST(ReadRegularFileTest, ReadsFilesAndRefusesEverythingElse) {
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "/moetune_read_file.txt";
  { std::ofstream(file) << "hello\n"; }
  auto r = ReadRegularFile(file, 100);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, "hello\n");

  auto too_big = ReadRegularFile(file, 3);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message().find("larger than 3 bytes"), std::string::npos);

  auto is_dir = ReadRegularFile(dir, 100);
  ASSERT_FALSE(is_dir.ok());
  EXPECT_NE(is_dir.error().message().find("is a directory"), std::string::npos)
      << is_dir.error().message();

  // /dev/zero never ends and is no file: refused at once, not read.
  auto zero = ReadRegularFile("/dev/zero", 1 << 20);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message().find("character device"), std::string::npos);

  // A FIFO with no writer: the open must not block.
  const std::string fifo = dir + "/moetune_read_file.fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto f = ReadRegularFile(fifo, 100);  // a blocking open would hang here
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("FIFO"), std::string::npos);

  auto missing = ReadRegularFile(dir + "/no-such-file", 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find("No such file"), std::string::npos);
  std::remove(fifo.c_str());
  std::remove(file.c_str());
}

}  // namespace
}  // namespace moetune
