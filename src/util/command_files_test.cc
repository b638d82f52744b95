#include "util/command_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "util/output_file.h"
#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

using testing::TempDir;

TEST(CommandFilesTest, WithoutAScopeNothingIsRefused) {
  TempDir dir;
  const std::string f = dir.File("a.txt");
  ASSERT_TRUE(NoteInputFile(f, "the model").ok());
  EXPECT_TRUE(ClaimOutputFile(f, "-o").ok());
  EXPECT_TRUE(ClaimOutputFile(f, "--report").ok());
}

TEST(CommandFilesTest, AnInputIsNeverAnOutput) {
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  std::ofstream(model) << "GGUF";
  CommandFilesScope scope;
  ASSERT_TRUE(NoteInputFile(model, "the model").ok());
  auto st = ClaimOutputFile(model, "--profile");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("--profile"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("the model"), std::string::npos) << st.error().message();
  // Through a symbolic link too.
  const std::string link = dir.File("link.json");
  ASSERT_EQ(::symlink(model.c_str(), link.c_str()), 0);
  EXPECT_FALSE(ClaimOutputFile(link, "--profile").ok());
  // And the other way round: an output that is read afterwards.
  const std::string out = dir.File("out.json");
  std::ofstream(out) << "{}";
  ASSERT_TRUE(ClaimOutputFile(out, "-o").ok());
  EXPECT_FALSE(NoteInputFile(out, "the --from file").ok());
  // Even when the reader's caller goes on regardless, the writer is refused.
  EXPECT_FALSE(ClaimOutputFile(out, "-o").ok());
}

TEST(CommandFilesTest, TwoOutputsNeverShareAFileButOneMayBeRewritten) {
  TempDir dir;
  CommandFilesScope scope;
  const std::string f = dir.File("r.html");  // does not exist yet
  ASSERT_TRUE(ClaimOutputFile(f, "--report").ok());
  EXPECT_TRUE(ClaimOutputFile(f, "--report").ok());
  auto st = ClaimOutputFile(dir.path() + "/./r.html", "-o");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("--report"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("-o"), std::string::npos) << st.error().message();
  // Standard output is no file, and a device is written through by any output.
  EXPECT_TRUE(ClaimOutputFile("-", "-o").ok());
  EXPECT_TRUE(ClaimOutputFile("-", "--report").ok());
  EXPECT_TRUE(ClaimOutputFile("/dev/null", "-o").ok());
  EXPECT_TRUE(ClaimOutputFile("/dev/null", "--report").ok());
}

TEST(CommandFilesTest, AnUpdatedInputMayBeReplacedByItsOwnRoleOnly) {
  TempDir dir;
  const std::string profile = dir.File("machine.json");
  std::ofstream(profile) << "{}";
  CommandFilesScope scope;
  ASSERT_TRUE(NoteInputFile(profile, "the machine profile").ok());
  EXPECT_TRUE(ClaimOutputFile(profile, "--profile", "the machine profile").ok());
  EXPECT_FALSE(ClaimOutputFile(profile, "-o").ok());
}

TEST(CommandFilesTest, AReleasedOutputMayBeReadButNotWrittenAgain) {
  TempDir dir;
  const std::string model = dir.File("tiny.gguf");
  std::ofstream(model) << "GGUF";
  CommandFilesScope scope;
  ASSERT_TRUE(ClaimOutputFile(model, "-o").ok());
  EXPECT_FALSE(NoteInputFile(model, "the model").ok());  // still being written
  ReleaseOutputFile(model);
  EXPECT_TRUE(NoteInputFile(model, "the model").ok());
  // Read now: writing it again would destroy an input.
  EXPECT_FALSE(ClaimOutputFile(model, "-o").ok());
  // Releasing a file that is no output changes nothing.
  ReleaseOutputFile(dir.File("other.gguf"));
  EXPECT_FALSE(ClaimOutputFile(model, "--report").ok());
}

TEST(CommandFilesTest, OutputFileFollowsTheRecord) {
  TempDir dir;
  const std::string model = dir.File("m.gguf");
  std::ofstream(model) << "GGUF model bytes";
  CommandFilesScope scope;
  ASSERT_TRUE(NoteInputFile(model, "the model").ok());
  OutputFileOptions o;
  o.role = "--profile";
  auto st = WriteFileSafely(model, "{}", o);
  ASSERT_FALSE(st.ok());
  std::ifstream in(model);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "GGUF model bytes");
  ASSERT_TRUE(WriteFileSafely(dir.File("a.md"), "x", o).ok());
  o.role = "--report";
  EXPECT_FALSE(WriteFileSafely(dir.File("a.md"), "y", o).ok());
}

}  // namespace
}  // namespace moetune
