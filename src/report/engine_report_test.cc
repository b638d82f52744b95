#include "report/engine_report.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

EngineInfo Sample() {
  EngineInfo e;
  e.dir = "/nonexistent/engine";
  e.origin = "--llama-dir";
  e.version_line = "version: 7 (abc)";
  e.build_number = 7;
  e.backends = {"CPU", "RPC"};
  EngineDevice d;
  d.name = "RPC0";
  d.description = "127.0.0.1:50052";
  d.total = Bytes(int64_t{8} << 30);
  d.free = Bytes(int64_t{6} << 30);
  e.devices.push_back(d);
  e.bench_flags = {"-ncmoe", "-ot"};
  e.warnings = {"an old engine"};
  return e;
}

TEST(EngineReport, TextNamesEveryPart) {
  const std::string t = FormatEngineInfo(Sample());
  EXPECT_NE(t.find("engine:    /nonexistent/engine (--llama-dir)"), std::string::npos) << t;
  EXPECT_NE(t.find("backends:  CPU, RPC"), std::string::npos) << t;
  EXPECT_NE(t.find("RPC0: 127.0.0.1:50052 (8.00 GiB total, 6.00 GiB free)"), std::string::npos)
      << t;
  EXPECT_NE(t.find("-lm (missing)"), std::string::npos) << t;
  EXPECT_NE(t.find("WARNING: an old engine"), std::string::npos) << t;
}

TEST(EngineReport, JsonHasDevicesToolsAndFlags) {
  const auto j = EngineInfoToJson(Sample());
  EXPECT_EQ(j["build_number"], 7);
  EXPECT_EQ(j["devices"][0]["free_bytes"], int64_t{6} << 30);
  EXPECT_TRUE(j["tools"]["llama-bench"].is_null());  // not in the folder
  EXPECT_EQ(j["bench_flags"].size(), 2u);
  EXPECT_EQ(j["warnings"][0], "an old engine");
}

}  // namespace
}  // namespace moetune
