#include "engine/engine_output.h"

#include <gtest/gtest.h>

#include <string>

namespace moetune {
namespace {

TEST(EngineInfoTest, ParsesDebianVersionLine) {
  EngineInfo info;
  ParseVersionOutput(
      "ggml_backend_load_best: failed to enumerate /usr/lib/x86_64-linux-gnu/ggml/backends0: No "
      "such file\n"
      "load_backend: loaded CPU backend from /x/libggml-cpu-sapphirerapids.so\n"
      "version: 0.7.0 (build 11669, commit Debian)\nbuilt with GNU 16.2.0 for Linux x86_64\n",
      &info);
  EXPECT_EQ(info.version, "0.7.0");
  EXPECT_EQ(info.build_number, 11669);
  EXPECT_EQ(info.commit, "Debian");
  EXPECT_EQ(info.built_with, "GNU 16.2.0 for Linux x86_64");
}

TEST(EngineInfoTest, ParsesUpstreamVersionLine) {
  EngineInfo info;
  ParseVersionOutput("version: 6540 (4f1d2a3b)\nbuilt with cc (GCC) 13.2 for x86_64-linux-gnu\n",
                     &info);
  EXPECT_EQ(info.build_number, 6540);
  EXPECT_EQ(info.commit, "4f1d2a3b");
  EXPECT_TRUE(info.version.empty());
}

TEST(EngineInfoTest, ParsesDeviceList) {
  const auto none = ParseListDevices("Available devices:\n  (none)\n");
  EXPECT_TRUE(none.empty());
  const auto devs = ParseListDevices(
      "Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23000 MiB free)\n"
      "  Vulkan0: AMD Radeon (RADV NAVI31) (16368 MiB, 16000 MiB free)\n");
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].name, "CUDA0");
  EXPECT_EQ(devs[0].description, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(devs[0].total->count(), Bytes::MiB(24080).count());
  EXPECT_EQ(devs[0].free->count(), Bytes::MiB(23000).count());
  EXPECT_EQ(devs[1].description, "AMD Radeon (RADV NAVI31)");
}

TEST(EngineInfoTest, ParsesHelpFlags) {
  const auto flags = ParseHelpFlags(
      "usage: llama-bench [options]\n\noptions:\n  -h, --help\n"
      "  --progress                                  print test progress indicators\n"
      "  -ncmoe, --n-cpu-moe <n>                           (default: 0)\n"
      "  -ot --override-tensor <tensor name pattern>=<buffer type>;...\n"
      "  -lm, --load-mode <auto|none|mmap|mlock|mmap+mlock|dio> (default: auto)\n"
      "  -d, --n-depth <n>                                 (default: 0)\n");
  for (const char* f : {"-h", "--help", "--progress", "-ncmoe", "--n-cpu-moe", "-ot",
                        "--override-tensor", "-lm", "-d", "--n-depth"}) {
    EXPECT_TRUE(flags.count(f)) << f;
  }
  EXPECT_FALSE(flags.count("<n>"));
  EXPECT_FALSE(flags.count("-fitt"));
}

TEST(EngineInfoTest, ParsesLoadedBackends) {
  const auto b = ParseLoadedBackends(
      "load_backend: loaded RPC backend from /x/libggml-rpc.so\n"
      "load_backend: loaded CPU backend from /x/libggml-cpu-haswell.so\n"
      "load_backend: loaded CPU backend from /x/libggml-cpu-haswell.so\n");
  EXPECT_EQ(b, (std::vector<std::string>{"RPC", "CPU"}));
}

TEST(EngineOutputTest, HugeNumbersAreRefusedNotThrown) {
  // A build number past int64 and a 400-digit MiB value: no exception, no wrap.
  EngineInfo info;
  ParseVersionOutput("version: 0.7.0 (build 99999999999999999999999, commit x)\n", &info);
  EXPECT_EQ(info.version, "0.7.0");
  EXPECT_EQ(info.build_number, -1);
  EXPECT_EQ(info.commit, "x");
  EngineInfo upstream;
  ParseVersionOutput("version: " + std::string(400, '9') + " (abc)\n", &upstream);
  EXPECT_EQ(upstream.build_number, -1);
  EXPECT_EQ(upstream.commit, "abc");

  const std::string big(400, '9');
  const auto devs = ParseListDevices("Available devices:\n  CUDA0: GPU (" + big + " MiB, " + big +
                                     " MiB free)\n  CUDA1: GPU (8796093022207 MiB, 1 MiB free)\n" +
                                     "  CUDA2: GPU (8796093022208 MiB, 1 MiB free)\n");
  // CUDA0 and CUDA2 do not fit: named without memory figures rather than wrapped.
  ASSERT_EQ(devs.size(), 3u);
  EXPECT_FALSE(devs[0].total.has_value());
  ASSERT_TRUE(devs[1].total.has_value());
  EXPECT_EQ(devs[1].total->count(), int64_t{8796093022207} << 20);
  EXPECT_FALSE(devs[2].total.has_value());
  EXPECT_FALSE(ParseMiB("1e400"));
  EXPECT_FALSE(ParseMiB("-1"));
  EXPECT_FALSE(ParseMiB("nan"));
  EXPECT_FALSE(ParseMiB("1e3"));
  EXPECT_FALSE(ParseMiB(".5"));
  EXPECT_EQ(ParseMiB("1.5")->count(), 1572864);
}

TEST(EngineOutputTest, AThreeMegabyteLineIsScannedNotRecursed) {
  // std::regex overflowed its stack on such a line (SIGSEGV).
  const std::string huge(3 << 20, 'a');
  EngineInfo info;
  ParseVersionOutput("version: 1 (" + huge + ")\n", &info);
  EXPECT_EQ(info.commit.size(), huge.size());
  EXPECT_TRUE(ParseListDevices("Available devices:\n  " + huge + "\n").empty());
  EXPECT_EQ(ParseHelpFlags("  -" + huge + "\n").size(), 1u);
  EXPECT_TRUE(ParseLoadedBackends("load_backend: loaded " + huge).empty());
  EXPECT_FALSE(ParseBenchProgressLine("llama-bench: benchmark 1/" + huge));
}

TEST(EngineOutputTest, BenchProgressLines) {
  const auto p = ParseBenchProgressLine("llama-bench: benchmark 3/12: prompt run 1/5");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->index, 3u);
  EXPECT_EQ(p->total, 12u);
  EXPECT_EQ(p->what, "prompt run 1/5");
  EXPECT_FALSE(ParseBenchProgressLine("llama-bench: benchmark 0/12: starting"));
  EXPECT_FALSE(ParseBenchProgressLine("llama-bench: benchmark 13/12: starting"));
  EXPECT_FALSE(ParseBenchProgressLine("llama-bench: benchmark x/12: starting"));
  EXPECT_FALSE(ParseBenchProgressLine("benchmark 1/2: not llama-bench"));
}

TEST(EngineOutputTest, DeviceNamesAndFlagsFromMessyText) {
  const auto devs = ParseListDevices(
      "Available devices:\n  RPC0: 127.0.0.1:50052 (15990 MiB, 15000 MiB free)\n"
      "  Vulkan0: AMD Radeon\n  bad name: x\n  (none)\nlog line\n  CUDA9: after the list\n");
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].name, "RPC0");
  EXPECT_EQ(devs[0].description, "127.0.0.1:50052");
  EXPECT_EQ(devs[1].name, "Vulkan0");
  EXPECT_FALSE(devs[1].total.has_value());
  const auto flags = ParseHelpFlags("  -fa, --flash-attn <on|off|auto>  (default: auto)\n - x\n");
  EXPECT_EQ(flags, (std::set<std::string>{"-fa", "--flash-attn"}));
}

}  // namespace
}  // namespace moetune
