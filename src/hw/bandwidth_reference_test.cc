#include "hw/bandwidth_reference.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

TEST(BandwidthReference, ParsesSysbenchOutput) {
  const auto g = ParseSysbenchGbps(
      "Total operations: 4 (    3.99 per second)\n\n4096.00 MiB transferred (16351.90 MiB/sec)\n");
  ASSERT_TRUE(g.has_value());
  EXPECT_NEAR(*g, 16351.90 * 1048576.0 / 1e9, 1e-9);
  EXPECT_FALSE(ParseSysbenchGbps("no figure"));
  EXPECT_FALSE(ParseSysbenchGbps("(x MiB/sec)"));
  EXPECT_FALSE(ParseSysbenchGbps("(1e999 MiB/sec)"));
}

TEST(BandwidthReference, DecodeFigureIsBytesPerTokenTimesRate) {
  const auto d = MakeDecodeReference(17.5, 314155008, 964820992, 32 << 20, 2, {"llama-bench"});
  EXPECT_NEAR(d.gbps, 17.5 * 314155008 / 1e9, 1e-12);
  EXPECT_TRUE(d.note.empty());
  // A 16 MiB model on a 32 MiB cache: said so.
  const auto cached = MakeDecodeReference(500, 4 << 20, 16 << 20, 32 << 20, 2, {});
  EXPECT_NE(cached.note.find("cache"), std::string::npos);
}

}  // namespace
}  // namespace moetune
