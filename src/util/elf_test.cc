#include "util/elf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "util/elf_test_util.h"
#include "util/temp_dir_test_util.h"

namespace moetune {
namespace {

using testing::BuildElf;
using testing::ElfSpec;

TEST(ElfTest, ReadsNeededAndRunPath) {
  ElfSpec spec;
  spec.needed = {"libllama.so.0", "libggml.so.0", "libc.so.6"};
  spec.run_path = "$ORIGIN:/opt/llama/lib";
  const std::string img = BuildElf(spec);
  auto d = ParseElfDynamic(MemoryElfReader(img));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->needed, spec.needed);
  EXPECT_EQ(d->run_path, (std::vector<std::string>{"$ORIGIN", "/opt/llama/lib"}));
}

TEST(ElfTest, RpathCountsWhenThereIsNoRunpath) {
  ElfSpec spec;
  spec.needed = {"libggml.so"};
  spec.run_path = "/a::/b";
  spec.use_rpath = true;
  auto d = ParseElfDynamic(MemoryElfReader(BuildElf(spec)));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->run_path, (std::vector<std::string>{"/a", "/b"}));
}

TEST(ElfTest, StaticExecutableHasNoDynamicSection) {
  ElfSpec spec;
  spec.dynamic = false;
  spec.symbols = {"ggml_backend_cpu_reg", "main"};
  const std::string img = BuildElf(spec);
  auto d = ParseElfDynamic(MemoryElfReader(img));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_TRUE(d->needed.empty());
  auto s = ParseElfSymbols(MemoryElfReader(img), "ggml_backend_");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(*s, std::vector<std::string>{"ggml_backend_cpu_reg"});
}

TEST(ElfTest, UndefinedSymbolsAreNotDefinitions) {
  ElfSpec spec;
  spec.symbols = {"ggml_backend_rpc_reg", "ggml_backend_cpu_reg"};
  spec.undefined = {"ggml_backend_cuda_reg"};
  auto s = ParseElfSymbols(MemoryElfReader(BuildElf(spec)), "ggml_backend_");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(*s, (std::vector<std::string>{"ggml_backend_cpu_reg", "ggml_backend_rpc_reg"}));
}

TEST(ElfTest, NotElfAndOtherClassesAreErrors) {
  auto script = ParseElfDynamic(MemoryElfReader("#!/bin/sh\nexec llama-bench \"$@\"\n"));
  ASSERT_FALSE(script.ok());
  EXPECT_EQ(script.error().kind(), ErrorKind::kFormat);
  std::string img = BuildElf({});
  img[EI_CLASS] = ELFCLASS32;
  auto elf32 = ParseElfDynamic(MemoryElfReader(img));
  ASSERT_FALSE(elf32.ok());
  EXPECT_EQ(elf32.error().kind(), ErrorKind::kUnsupported);
}

TEST(ElfTest, TruncatedOrCorruptTablesAreErrorsNotCrashes) {
  ElfSpec spec;
  spec.needed = {"libggml.so"};
  spec.symbols = {"ggml_backend_cpu_reg"};
  const std::string img = BuildElf(spec);
  // Every truncation: an error or a result, never a read outside the bytes.
  for (std::size_t n = 0; n < img.size(); n += 7) {
    const std::string cut = img.substr(0, n);
    (void)ParseElfDynamic(MemoryElfReader(cut));
    (void)ParseElfSymbols(MemoryElfReader(cut), "ggml_");
  }
  // A DT_NEEDED offset past the string table.
  std::string bad = img;
  Elf64_Ehdr h{};
  std::memcpy(&h, bad.data(), sizeof h);
  Elf64_Phdr dyn{};
  std::memcpy(&dyn, bad.data() + h.e_phoff + sizeof(Elf64_Phdr), sizeof dyn);
  Elf64_Dyn first{};
  std::memcpy(&first, bad.data() + dyn.p_offset, sizeof first);
  ASSERT_EQ(first.d_tag, DT_NEEDED);
  first.d_un.d_val = 1u << 30;
  std::memcpy(bad.data() + dyn.p_offset, &first, sizeof first);
  auto r = ParseElfDynamic(MemoryElfReader(bad));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("DT_NEEDED"), std::string::npos) << r.error().message();
  // A section count beyond the file.
  bad = img;
  h.e_shnum = 60000;
  std::memcpy(bad.data(), &h, sizeof h);
  EXPECT_FALSE(ParseElfSymbols(MemoryElfReader(bad), "ggml_").ok());
}

TEST(ElfTest, FilesAreReadAndErrorsNameThePath) {
  testing::TempDir dir;
  ElfSpec spec;
  spec.needed = {"libggml-cuda.so"};
  std::ofstream(dir.File("tool"), std::ios::binary) << BuildElf(spec);
  auto d = ReadElfDynamic(dir.File("tool"));
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->needed, spec.needed);
  auto missing = ReadElfDynamic(dir.File("nope"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find(dir.File("nope")), std::string::npos);
  auto folder = ReadElfDynamic(dir.path());
  ASSERT_FALSE(folder.ok());
}

// The reader against a real file of this machine: the C library is a shared
// object with a dynamic section and exported symbols.
TEST(ElfTest, ReadsThisProcess) {
  auto d = ReadElfDynamic("/proc/self/exe");
  ASSERT_TRUE(d.ok()) << d.error().message();
  bool libc = false;
  for (const auto& n : d->needed) libc = libc || n.starts_with("libc.so");
  EXPECT_TRUE(libc);
  auto s = ReadElfSymbols("/proc/self/exe", "main");
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_NE(std::find(s->begin(), s->end(), "main"), s->end());
}

}  // namespace
}  // namespace moetune
