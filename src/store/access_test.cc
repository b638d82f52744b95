#include "store/access.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "store/stores_test_util.h"

namespace moetune {
namespace {

using testing::Stranger;
using testing::TempDir;

// The tests run as root (or as the files' owner): the checks are made for
// another user, from the modes, so that both answers can be asserted.
TEST(StoreAccessTest, OwnerOnlyFileIsUnreadableForAnotherUserWithTheFacts) {
  TempDir dir;
  testing::OpenToOthers(dir.path());
  const std::string file = dir.File("blob");
  testing::WriteText(file, "GGUF");
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  EXPECT_TRUE(CheckAccess(file, Identity{::geteuid(), {}}).ok());
  const AccessCheck c = CheckAccess(file, Stranger());
  EXPECT_EQ(c.status, AccessStatus::kNoRead);
  EXPECT_EQ(c.blocker, file);
  EXPECT_EQ(c.mode, 0600u);
  EXPECT_FALSE(c.blocker_is_folder);
  EXPECT_NE(DescribeAccess(c).find("mode 0600) may be read by only its owner"), std::string::npos)
      << DescribeAccess(c);
  const std::string fix = AccessFix(c, StoreKind::kOllama);
  EXPECT_NE(fix.find("Ollama's files belong to the user its service runs as"), std::string::npos)
      << fix;
  EXPECT_NE(fix.find("sudo -u " + c.owner + " moetune"), std::string::npos) << fix;
  EXPECT_NE(fix.find("sudo chmod g+r " + file), std::string::npos) << fix;
  EXPECT_NE(fix.find("sudo usermod -aG " + c.group + " $USER"), std::string::npos) << fix;
  EXPECT_NE(fix.find("sudo install -m 0644 -o $USER " + file), std::string::npos) << fix;
  EXPECT_NE(fix.find("namei -l"), std::string::npos) << fix;
}

TEST(StoreAccessTest, ClosedFolderOnTheWayIsTheBlocker) {
  TempDir dir;
  testing::OpenToOthers(dir.path());
  const std::string home = dir.File("usr/share/ollama");
  const std::string file = home + "/.ollama/models/blobs/sha256-x";
  testing::WriteText(file, "GGUF");
  ASSERT_EQ(::chmod(home.c_str(), 0700), 0);
  const AccessCheck c = CheckAccess(file, Stranger());
  EXPECT_EQ(c.status, AccessStatus::kNoSearch);
  EXPECT_EQ(c.blocker, home);
  EXPECT_TRUE(c.blocker_is_folder);
  EXPECT_EQ(c.mode, 0700u);
  EXPECT_NE(DescribeAccess(c).find("the folder " + home), std::string::npos);
  EXPECT_NE(DescribeAccess(c).find("lets in only its owner"), std::string::npos);
  EXPECT_NE(AccessFix(c, StoreKind::kOllama).find("sudo chmod g+rx " + home), std::string::npos);
  const AccessCheck folder = CheckFolderAccess(home + "/.ollama/models", Stranger());
  EXPECT_EQ(folder.status, AccessStatus::kNoSearch);
  EXPECT_EQ(folder.blocker, home);
  EXPECT_EQ(AccessFix(folder, StoreKind::kOllama).find("install -m"), std::string::npos)
      << "a store that cannot be listed cannot be copied file by file";
}

TEST(StoreAccessTest, GroupMembershipDecides) {
  TempDir dir;
  testing::OpenToOthers(dir.path());
  const std::string file = dir.File("blob");
  testing::WriteText(file, "GGUF");
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_TRUE(CheckAccess(file, Identity{12345, {12345, st.st_gid}}).ok());
  const AccessCheck c = CheckAccess(file, Stranger());
  EXPECT_EQ(c.status, AccessStatus::kNoRead);
  EXPECT_TRUE(c.group_may);
  EXPECT_FALSE(c.user_in_group);
  EXPECT_NE(DescribeAccess(c).find("you are not in that group in this session"), std::string::npos)
      << DescribeAccess(c);
  // A member already: no advice to join.
  AccessCheck member = c;
  member.user_in_group = true;
  EXPECT_EQ(AccessFix(member, StoreKind::kFolder).find("usermod"), std::string::npos);
}

TEST(StoreAccessTest, DanglingLinkMissingFileAndFifoAreNamed) {
  TempDir dir;
  testing::OpenToOthers(dir.path());
  testing::Link("../blobs/gone", dir.File("snap/model.gguf"));
  const AccessCheck dangling = CheckAccess(dir.File("snap/model.gguf"), Stranger());
  EXPECT_EQ(dangling.status, AccessStatus::kDangling);
  EXPECT_EQ(dangling.detail, "../blobs/gone");
  EXPECT_EQ(CheckAccess(dir.File("nothing"), Stranger()).status, AccessStatus::kMissing);
  const std::string fifo = dir.File("pipe.gguf");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(CheckAccess(fifo, Stranger()).status, AccessStatus::kNotRegular);
  EXPECT_EQ(CheckFolderAccess(fifo, Stranger()).status, AccessStatus::kNotRegular);
  EXPECT_TRUE(CheckFolderAccess(dir.path(), Stranger()).ok());
}

}  // namespace
}  // namespace moetune
