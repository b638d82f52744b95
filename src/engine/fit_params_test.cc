#include "engine/fit_params.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "config/server_argv.h"

namespace moetune {
namespace {

TEST(FitParamsTest, ParsesRealOutput) {
  // Real stdout of llama-fit-params 0.7.0 on a synthesized model (CPU only).
  auto r = ParseFitParamsOutput("Host 13 32 12 \n");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].name, "Host");
  EXPECT_EQ((*r)[0].model_bytes, Bytes::MiB(13));
  EXPECT_EQ((*r)[0].context_bytes, Bytes::MiB(32));
  EXPECT_EQ((*r)[0].compute_bytes, Bytes::MiB(12));
  EXPECT_EQ((*r)[0].total(), Bytes::MiB(57));
}

TEST(FitParamsTest, ParsesSeveralDevicesAndIgnoresOtherLines) {
  auto r = ParseFitParamsOutput(
      "some log line\nCUDA0 20480 1024 512\nCUDA1 10240.5 0 256\nHost 900 0 64\n");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[1].name, "CUDA1");
  EXPECT_EQ((*r)[1].model_bytes, Bytes::MiB(10240.5));
}

TEST(FitParamsTest, HugeNumbersAndLongLinesAreRefusedNotFatal) {
  // A 400-digit MiB value threw std::out_of_range (std::stod); a 3 MB line
  // overflowed std::regex's stack.
  const std::string big(400, '9');
  auto r = ParseFitParamsOutput("Host " + big + " 1 1\nCUDA0 1 " + big + " 1\nHost 13 32 12\n");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].model_bytes, Bytes::MiB(13));
  const std::string huge(3 << 20, '7');
  EXPECT_FALSE(ParseFitParamsOutput("Host " + huge + " 1 1\n").ok());
  EXPECT_FALSE(ParseFitParamsOutput("Host 1 1 1 " + huge + "\n").ok());
  EXPECT_FALSE(ParseFitParamsOutput("Host -1 1 1\nHost 1e3 1 1\n").ok());
}

TEST(FitParamsTest, NothingParsedIsAnError) {
  auto r = ParseFitParamsOutput("-c 4096 -ngl -1\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("-fitp"), std::string::npos);
}

TEST(FitParamsTest, ArgvIsThePrintedCommandsOwn) {
  EngineInfo info;
  info.dir = "/e";
  ServerConfig c;
  c.model = "/m/a b.gguf";
  c.placement.n_cpu_moe = 5;
  c.ctx_size = 32768;
  c.fit = Switch::kOff;
  const std::vector<std::string> flags = {"-ngl", "99", "--n-cpu-moe", "5", "-c", "32768"};
  FitParamsOptions o;
  o.rpc = "127.0.0.1:50052";
  o.count_host_weights = true;
  const auto argv = FitParamsArgv(info, c, o);
  auto after = [&](const std::string& f) { return *(std::find(argv.begin(), argv.end(), f) + 1); };
  EXPECT_EQ(argv[0], "/e/llama-fit-params");
  EXPECT_EQ(after("-m"), "/m/a b.gguf");
  EXPECT_TRUE(std::search(argv.begin(), argv.end(), flags.begin(), flags.end()) != argv.end());
  EXPECT_EQ(after("--rpc"), "127.0.0.1:50052");
  EXPECT_EQ(after("-lm"), "none");
  EXPECT_EQ(after("-fit"), "off");
  EXPECT_EQ(after("-fitp"), "on");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--no-repack"), 1);
  // Without options: the command's own words, the tool in place of llama-server.
  auto plain = FitParamsArgv(info, c);
  std::vector<std::string> printed = ServerArgv(c);
  plain.erase(plain.end() - 2, plain.end());  // -fitp on
  plain[0] = printed[0];
  EXPECT_EQ(plain, printed);
}

TEST(FitParamsTest, MissingToolIsNotFound) {
  EngineInfo info;
  info.dir = "/nonexistent";
  ServerConfig c;
  c.model = "/m.gguf";
  auto r = RunFitParams(info, c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kNotFound);
}

}  // namespace
}  // namespace moetune
