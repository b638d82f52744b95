#include "util/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "util/temp_dir_test_util.h"
#include "util/temp_files.h"

namespace moetune {
namespace {

using testing::TempDir;
namespace fs = std::filesystem;

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Files in `dir` whose name contains ".tmp." (what a failed write could leave).
int Leftovers(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  }
  return n;
}

TEST(OutputFileTest, WritesANewFileWithUmaskPermissions) {
  TempDir dir;
  const std::string path = dir.File("out.json");
  ASSERT_TRUE(WriteFileSafely(path, "hello\n").ok());
  EXPECT_EQ(Slurp(path), "hello\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  EXPECT_EQ(Leftovers(dir.path()), 0);
  EXPECT_EQ(RegisteredTempFileCount(), 0);
}

TEST(OutputFileTest, ReplacingKeepsTheOldPermissions) {
  TempDir dir;
  const std::string path = dir.File("out.txt");
  ASSERT_TRUE(WriteFileSafely(path, "old").ok());
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  ASSERT_TRUE(WriteFileSafely(path, "new").ok());
  EXPECT_EQ(Slurp(path), "new");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(OutputFileTest, SymlinkIsFollowedAndKept) {
  TempDir dir;
  const std::string target = dir.File("real.txt");
  const std::string link = dir.File("link.txt");
  ASSERT_TRUE(WriteFileSafely(target, "old").ok());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ASSERT_TRUE(WriteFileSafely(link, "new").ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(Slurp(target), "new");
  EXPECT_EQ(Leftovers(dir.path()), 0);
}

TEST(OutputFileTest, DanglingSymlinkIsRefused) {
  TempDir dir;
  const std::string link = dir.File("link.txt");
  ASSERT_EQ(::symlink(dir.File("missing").c_str(), link.c_str()), 0);
  auto st = WriteFileSafely(link, "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("symbolic link"), std::string::npos);
  EXPECT_TRUE(fs::is_symlink(link));
}

TEST(OutputFileTest, DeviceIsWrittenThroughNotReplaced) {
  ASSERT_TRUE(WriteFileSafely("/dev/null", "discarded").ok());
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputFileTest, FullDeviceReportsNoSpace) {
  if (::access("/dev/full", W_OK) != 0) GTEST_FAIL() << "/dev/full is needed for this test";
  auto st = WriteFileSafely("/dev/full", std::string(1 << 16, 'x'));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("No space left on device"), std::string::npos)
      << st.error().message();
}

TEST(OutputFileTest, FifoWithoutReaderFailsInsteadOfHanging) {
  TempDir dir;
  const std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto st = WriteFileSafely(fifo, "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("no reader"), std::string::npos) << st.error().message();
  struct stat s {};
  ASSERT_EQ(::stat(fifo.c_str(), &s), 0);
  EXPECT_TRUE(S_ISFIFO(s.st_mode));
}

TEST(OutputFileTest, FifoWithReaderGetsTheText) {
  TempDir dir;
  const std::string fifo = dir.File("pipe");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Slurp(fifo); });
  // The reader may not have opened yet: retry briefly (ENXIO until it has).
  Status st = Error(ErrorKind::kIo, "not tried");
  for (int i = 0; i < 200 && !st.ok(); ++i) {
    st = WriteFileSafely(fifo, "through the pipe");
    if (!st.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reader.join();
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(got, "through the pipe");
}

TEST(OutputFileTest, DirectoryAndTrailingSlashAreRefused) {
  TempDir dir;
  auto a = WriteFileSafely(dir.path(), "x");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find("directory"), std::string::npos) << a.error().message();
  auto b = WriteFileSafely(dir.path() + "/", "x");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("folder"), std::string::npos) << b.error().message();
  EXPECT_EQ(Leftovers(dir.path()), 0);
}

TEST(OutputFileTest, InputIsNeverOverwritten) {
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  ASSERT_TRUE(WriteFileSafely(model, "model bytes").ok());
  const std::string link = dir.File("alias.gguf");
  ASSERT_EQ(::symlink(model.c_str(), link.c_str()), 0);
  OutputFileOptions o;
  o.inputs = {model};
  for (const std::string& out : {model, link, dir.path() + "/./m.gguf"}) {
    auto st = WriteFileSafely(out, "report", o);
    ASSERT_FALSE(st.ok()) << out;
    EXPECT_NE(st.error().message().find("is the input"), std::string::npos);
  }
  EXPECT_EQ(Slurp(model), "model bytes");
}

TEST(OutputFileTest, MissingFolderNamesTheReason) {
  TempDir dir;
  auto st = WriteFileSafely(dir.File("no/such/out.json"), "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("No such file or directory"), std::string::npos)
      << st.error().message();
}

TEST(OutputFileTest, UncommittedWriterLeavesNothing) {
  TempDir dir;
  const std::string path = dir.File("out.bin");
  {
    auto f = OutputFile::Open(path);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Write("partial").ok());
    EXPECT_EQ(RegisteredTempFileCount(), 1);
    EXPECT_EQ(Leftovers(dir.path()), 1);
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(Leftovers(dir.path()), 0);
  EXPECT_EQ(RegisteredTempFileCount(), 0);
}

TEST(OutputFileTest, SignalCleanupRemovesRegisteredTemporaries) {
  TempDir dir;
  auto f = OutputFile::Open(dir.File("out.bin"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(Leftovers(dir.path()), 1);
  RemoveRegisteredTempFiles();  // what the signal handler calls
  EXPECT_EQ(Leftovers(dir.path()), 0);
}

}  // namespace
}  // namespace moetune

namespace moetune {
namespace {

TEST(OutputFileTest, FilesReadBackMustBeRegular) {
  testing::TempDir dir;
  const std::string fifo = dir.File("log.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  OutputFileOptions o;
  o.role = "--server-log";
  o.regular_only = true;
  for (const std::string& path : {fifo, std::string("/dev/null")}) {
    auto t = CheckOutputTarget(path, o);
    ASSERT_FALSE(t.ok()) << path;
    EXPECT_NE(t.error().message().find("--server-log"), std::string::npos);
    EXPECT_NE(t.error().message().find("must be a regular file"), std::string::npos);
  }
  auto fresh = CheckOutputTarget(dir.File("new.log"), o);
  ASSERT_TRUE(fresh.ok()) << fresh.error().message();
  EXPECT_FALSE(fresh->exists);
  // A dangling symbolic link is refused whatever the role.
  ASSERT_EQ(::symlink(dir.File("missing").c_str(), dir.File("dangling").c_str()), 0);
  EXPECT_FALSE(CheckOutputTarget(dir.File("dangling"), o).ok());
}

}  // namespace
}  // namespace moetune
