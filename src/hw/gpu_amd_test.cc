#include "hw/gpu_amd.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

SysRoot Fixture(const char* name) {
  return SysRoot(std::string(MOETUNE_SOURCE_DIR) + "/tests/fixtures/hw/" + name);
}

TEST(AmdScan, ReadsVramAndGttFromSysfs) {
  const AmdScan scan = ScanAmdGpus(Fixture("amd_2ccd_smt"));
  ASSERT_EQ(scan.gpus.size(), 1u);  // card1-DP-1 is a connector, not a card
  const GpuInfo& g = scan.gpus[0];
  EXPECT_EQ(g.vendor, "amd");
  EXPECT_EQ(g.name, "Radeon RX 7900 XTX");
  EXPECT_EQ(g.total_bytes, 24 * kGiB);
  EXPECT_EQ(g.used_bytes, 3 * kGiB / 2);
  EXPECT_EQ(g.free_bytes, 24 * kGiB - 3 * kGiB / 2);
  EXPECT_EQ(g.gtt_total_bytes, 48 * kGiB);
  EXPECT_EQ(g.pcie_gen_max, 4);
  EXPECT_EQ(g.pcie_width_max, 16);
}

TEST(AmdScan, SkipsOtherVendorsAndMissingDrm) {
  EXPECT_TRUE(ScanAmdGpus(Fixture("intel_hybrid_6p8e")).gpus.empty());  // Intel iGPU only
  const AmdScan none = ScanAmdGpus(Fixture("vm_2core"));
  EXPECT_TRUE(none.gpus.empty());
  ASSERT_EQ(none.notes.size(), 1u);
  EXPECT_NE(none.notes[0].find("/sys/class/drm"), std::string::npos);
}

TEST(PcieGenerationFromSpeed, MapsTransferRates) {
  EXPECT_EQ(PcieGenerationFromSpeed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(PcieGenerationFromSpeed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(PcieGenerationFromSpeed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(PcieGenerationFromSpeed("Unknown"), 0);
}

}  // namespace
}  // namespace moetune
