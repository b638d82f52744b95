#include "engine/engine_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "engine/engine_probes.h"

namespace moetune {
namespace {

namespace fs = std::filesystem;

class FakeRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    // One folder per process: ctest runs tests of this suite side by side.
    root_ = fs::path(::testing::TempDir()) / ("moetune_engine_root_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "sys/bus/pci/devices/0000:01:00.0");
    fs::create_directories(root_ / "sys/bus/pci/devices/0000:00:02.0");
    std::ofstream(root_ / "sys/bus/pci/devices/0000:00:02.0/vendor") << "0x8086\n";
    std::ofstream(root_ / "sys/bus/pci/devices/0000:00:02.0/class") << "0x030000\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  void AddNvidia() {
    std::ofstream(root_ / "sys/bus/pci/devices/0000:01:00.0/vendor") << "0x10de\n";
    std::ofstream(root_ / "sys/bus/pci/devices/0000:01:00.0/class") << "0x030200\n";
  }
  fs::path root_;
};

TEST_F(FakeRoot, NvidiaDetectionFromPci) {
  EXPECT_FALSE(NvidiaGpuPresent(root_.string()));
  AddNvidia();
  EXPECT_TRUE(NvidiaGpuPresent(root_.string()));
}

TEST(EngineWarningsTest, NvidiaWithoutCudaWarnsWithTheFix) {
  EngineInfo info;
  info.dir = "/opt/llama";
  info.backends = {"RPC", "CPU"};
  info.bench_flags = {"-ncmoe"};
  const auto w = EngineWarnings(info, true);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("no CUDA backend"), std::string::npos);
  EXPECT_NE(w[0].find("GGML_CUDA=ON"), std::string::npos);
  EXPECT_NE(w[0].find("--llama-dir"), std::string::npos);
  EXPECT_TRUE(EngineWarnings(info, false).empty());

  info.devices.push_back({"CUDA0", "NVIDIA H200", Bytes::GiB(139), Bytes::GiB(138)});
  EXPECT_TRUE(EngineWarnings(info, true).empty());
}

TEST(EngineWarningsTest, MissingNcmoeIsReported) {
  EngineInfo info;
  info.bench_flags = {"-ngl"};
  const auto w = EngineWarnings(info, false);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("-ncmoe"), std::string::npos);
}

TEST(EngineDiscoveryTest, BadLlamaDirIsAClearError) {
  DiscoveryOptions o;
  o.llama_dir = "/nonexistent/llama.cpp";
  auto r = DiscoverEngine(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(r.error().message().find("/nonexistent/llama.cpp"), std::string::npos);
}

TEST(EngineDiscoveryTest, WindowsBuildIsNamedAsSuch) {
  // llama.cpp's Windows release archive in a folder WSL can see: the error says
  // what it is and where the way forward is, not only "no llama-bench".
  const fs::path dir = fs::path(::testing::TempDir()) / "moetune_llama_windows";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "llama-bench.exe") << "MZ";
  DiscoveryOptions o;
  o.llama_dir = dir.string();
  auto r = DiscoverEngine(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("llama-bench.exe is a Windows build"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("moetune doctor --llama-dir"), std::string::npos);
  // A plain missing folder says nothing about Windows.
  o.llama_dir = (dir / "missing").string();
  r = DiscoverEngine(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find("Windows"), std::string::npos) << r.error().message();
  fs::remove_all(dir);
}

TEST(EngineDiscoveryTest, LlamaDirAcceptsBuildTree) {
  const fs::path dir = fs::path(::testing::TempDir()) / "moetune_llama_tree";
  fs::remove_all(dir);
  fs::create_directories(dir / "build" / "bin");
  const fs::path bench = dir / "build" / "bin" / "llama-bench";
  std::ofstream(bench) << "#!/bin/sh\nexit 0\n";
  fs::permissions(bench, fs::perms::owner_all);
  DiscoveryOptions o;
  o.llama_dir = dir.string();
  o.probe = false;
  auto r = DiscoverEngine(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->dir, fs::weakly_canonical(dir / "build" / "bin").string());
  EXPECT_EQ(r->origin, "--llama-dir");
  EXPECT_EQ(r->ToolPath("llama-bench"), bench.string());
  fs::remove_all(dir);
}

// A fake llama-bench whose answers a test controls, with the probe cache in a
// private folder.
class ProbeCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("moetune_probe_cache_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "engine");
    fs::create_directories(root_ / "cache");
    const char* old = std::getenv("XDG_CACHE_HOME");
    saved_ = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv("XDG_CACHE_HOME", (root_ / "cache").c_str(), 1);
  }
  void TearDown() override {
    if (saved_) {
      ::setenv("XDG_CACHE_HOME", saved_->c_str(), 1);
    } else {
      ::unsetenv("XDG_CACHE_HOME");
    }
    fs::remove_all(root_);
  }
  void WriteEngine(const std::string& version_body) {
    const fs::path bench = root_ / "engine" / "llama-bench";
    std::ofstream(bench) << "#!/bin/sh\ncase \"$1\" in\n"
                         << "  --version) " << version_body << " ;;\n"
                         << "  --help) echo '  -ngl, --n-gpu-layers <n>' ;;\n"
                         << "  --list-devices) echo 'Available devices:' ;;\n"
                         << "esac\nexit 0\n";
    fs::permissions(bench, fs::perms::owner_all);
  }
  std::vector<std::string> CacheFiles() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(root_ / "cache")) {
      if (e.is_regular_file()) out.push_back(e.path().filename().string());
    }
    return out;
  }
  Result<EngineInfo> Discover() {
    DiscoveryOptions o;
    o.llama_dir = (root_ / "engine").string();
    return DiscoverEngine(o);
  }
  fs::path root_;
  std::optional<std::string> saved_;
};

TEST_F(ProbeCacheTest, FailedProbesAreNotCachedAndAFixIsSeenAtOnce) {
  // A broken engine: no version line. Nothing is cached...
  WriteEngine("echo 'error while loading shared libraries: libggml.so'");
  auto broken = Discover();
  ASSERT_TRUE(broken.ok()) << broken.error().message();
  EXPECT_TRUE(broken->version_line.empty());
  EXPECT_TRUE(CacheFiles().empty());
  // ...so the fixed engine's version is read on the next run.
  WriteEngine("echo 'version: 0.7.0 (build 11669, commit Debian)'");
  auto fixed = Discover();
  ASSERT_TRUE(fixed.ok()) << fixed.error().message();
  EXPECT_EQ(fixed->build_number, 11669);
  ASSERT_EQ(CacheFiles().size(), 1u);
  EXPECT_TRUE(CacheFiles()[0].starts_with("engine-")) << CacheFiles()[0];
  // Replacing the binary changes its identity: the new version is read, not the cached one.
  WriteEngine("echo 'version: 0.8.0 (build 12000, commit Debian)'");
  auto replaced = Discover();
  ASSERT_TRUE(replaced.ok());
  EXPECT_EQ(replaced->build_number, 12000);
}

TEST_F(ProbeCacheTest, BytesThatAreNotUtf8LeaveNoTemporaryFile) {
  // The cache write threw on invalid UTF-8 and left an empty temporary file.
  WriteEngine("printf 'version: 1 (\\377\\033[2J)\\n'");
  auto info = Discover();
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->build_number, 1);
  for (const auto& f : CacheFiles()) {
    EXPECT_TRUE(f.starts_with("engine-") && f.ends_with(".json")) << f;
  }
}

TEST(ProbeCacheKey, IdentityOfTheBinary) {
  const fs::path file = fs::path(::testing::TempDir()) / "moetune_probe_key";
  std::ofstream(file) << "a";
  const std::string k1 = ProbeCacheKey(file.string());
  EXPECT_NE(k1.find(fs::canonical(file).string()), std::string::npos);
  fs::remove(file);
  std::ofstream(file) << "ab";
  EXPECT_NE(ProbeCacheKey(file.string()), k1);
  EXPECT_TRUE(ProbeCacheKey("/nonexistent/llama-bench").empty());
  fs::remove(file);
}

// A 0.4.0-like engine: llama-bench has no --version (it prints its usage and
// exits 1) while llama-server prints the build info; its backends are linked
// in, so no "load_backend" line is printed anywhere.
TEST_F(ProbeCacheTest, VersionFromAnotherToolWhenLlamaBenchHasNone) {
  WriteEngine("echo 'error: invalid parameter for argument: --version'; exit 1");
  const fs::path server = root_ / "engine" / "llama-server";
  std::ofstream(server)
      << "#!/bin/sh\ncase \"$1\" in\n"
      << "  --version) echo 'version: 0.4.0-dev (build 1, commit 80fb11a)' >&2;"
      << " echo 'built with GNU 12.2.0 for Linux x86_64' >&2 ;;\n"
      << "  --help) echo '-fit,   --fit [on|off]'; echo '-ngl, --n-gpu-layers N' ;;\n"
      << "esac\nexit 0\n";
  fs::permissions(server, fs::perms::owner_all);
  auto info = Discover();
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_EQ(info->version, "0.4.0-dev");
  EXPECT_EQ(info->build_number, 1);
  EXPECT_EQ(info->version_tool, "llama-server");
  for (const auto& w : info->warnings) EXPECT_EQ(w.find("version"), std::string::npos) << w;
  EXPECT_EQ(info->Supports(EngineTool::kServer, "-fit"), std::optional<bool>(true));
  EXPECT_EQ(info->Supports(EngineTool::kServer, "-kvu"), std::optional<bool>(false));
  EXPECT_EQ(info->Supports(EngineTool::kFitParams, "-fitp"), std::nullopt);  // no such tool
  // Cached like any probe that worked: the second discovery reads the cache.
  ASSERT_EQ(CacheFiles().size(), 1u);
  auto again = Discover();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->version_tool, "llama-server");
  EXPECT_EQ(again->server_flags, info->server_flags);
}

TEST_F(ProbeCacheTest, NoVersionAnywhereIsAWarningNamingTheTools) {
  WriteEngine("echo 'usage: llama-bench [options]'");
  auto info = Discover();
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_TRUE(info->version_tool.empty());
  ASSERT_FALSE(info->warnings.empty());
  EXPECT_NE(info->warnings[0].find("llama-server"), std::string::npos) << info->warnings[0];
  EXPECT_NE(info->warnings[0].find("very old"), std::string::npos) << info->warnings[0];
  EXPECT_TRUE(CacheFiles().empty());
}

TEST(EngineFlagsTest, SupportsSpellingAndDescribe) {
  EngineInfo info;
  info.dir = "/opt/llama";
  EXPECT_EQ(info.Supports(EngineTool::kBench, "-ncmoe"), std::nullopt);
  EXPECT_EQ(info.Spelling(EngineTool::kBench, {"-ncmoe", "--n-cpu-moe"}), "-ncmoe");
  EXPECT_EQ(info.Describe(), "of unknown version");
  info.bench_flags = {"--n-cpu-moe", "-ngl"};
  EXPECT_EQ(info.Supports(EngineTool::kBench, "-ncmoe"), std::optional<bool>(false));
  EXPECT_EQ(info.Spelling(EngineTool::kBench, {"-ncmoe", "--n-cpu-moe"}), "--n-cpu-moe");
  EXPECT_EQ(info.Spelling(EngineTool::kBench, {"-fitt"}), std::nullopt);
  info.version = "0.4.0-dev";
  info.build_number = 1;
  EXPECT_EQ(info.Describe(), "0.4.0-dev (build 1)");
  info.version.clear();
  info.build_number = 6540;
  EXPECT_EQ(info.Describe(), "build 6540");
}

TEST(EngineFlagsTest, CheckNamesTheVersionTheToolAndEachMissingFlag) {
  EngineInfo info;
  info.dir = "/opt/llama";
  info.version = "0.4.0-dev";
  info.build_number = 1;
  const std::vector<std::string> argv = {
      "llama-fit-params", "-m",  "m.gguf", "-ngl", "-1", "-kvu", "-lm", "none", "-fitp", "on",
      "--no-repack",      "-kvu"};
  // Flags unknown (the tool printed none): nothing is refused.
  EXPECT_TRUE(CheckEngineFlags(info, EngineTool::kFitParams, argv, "the dry run").ok());
  info.fit_params_flags = {"-m", "-ngl", "-lm", "-fitp"};
  auto r = CheckEngineFlags(info, EngineTool::kFitParams, argv, "the memory dry run");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kUnsupported);
  const std::string& m = r.error().message();
  EXPECT_NE(m.find("llama-fit-params"), std::string::npos) << m;
  EXPECT_NE(m.find("0.4.0-dev (build 1)"), std::string::npos) << m;
  EXPECT_NE(m.find("-kvu, --no-repack"), std::string::npos) << m;  // each once, in order
  EXPECT_EQ(m.find("-1"), std::string::npos) << m;                 // a value, not a flag
  EXPECT_NE(m.find("the memory dry run"), std::string::npos) << m;
  info.fit_params_flags.insert({"-kvu", "--no-repack"});
  EXPECT_TRUE(CheckEngineFlags(info, EngineTool::kFitParams, argv, "x").ok());
}

TEST(EngineWarningsTest, CudaBackendWithoutDeviceIsItsOwnWarning) {
  EngineInfo info;
  info.dir = "/opt/llama/build/bin";
  info.backends = {"CPU", "CUDA"};
  info.backend_source = BackendSource::kLinked;
  info.bench_flags = {"-ncmoe"};
  const auto w = EngineWarnings(info, true);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("has the CUDA backend (linked in) but sees no CUDA device"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("nvidia-smi"), std::string::npos);
  const EngineProbe p = EngineProbeFromInfo(info);
  EXPECT_FALSE(p.has_cuda);
  EXPECT_TRUE(p.cuda_backend);
  EXPECT_EQ(p.backend_source, "linked in");
  info.devices.push_back({"CUDA0", "NVIDIA GeForce RTX 4070", Bytes::GiB(12), Bytes::GiB(11)});
  EXPECT_TRUE(EngineWarnings(info, true).empty());
  EXPECT_TRUE(EngineProbeFromInfo(info).has_cuda);
}

}  // namespace
}  // namespace moetune
