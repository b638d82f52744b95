#include "hw/gpu.h"

namespace moetune {

double PcieBandwidthGbps(int generation, int width) {
  // GT/s per lane and encoding efficiency, per generation.
  double per_lane = 0;
  switch (generation) {
    case 1:
      per_lane = 2.5 * 8 / 10;
      break;
    case 2:
      per_lane = 5.0 * 8 / 10;
      break;
    case 3:
      per_lane = 8.0 * 128 / 130;
      break;
    case 4:
      per_lane = 16.0 * 128 / 130;
      break;
    case 5:
      per_lane = 32.0 * 128 / 130;
      break;
    case 6:
      per_lane = 64.0 * 128 / 130;
      break;
    default:
      return 0;
  }
  return per_lane / 8.0 * width;  // Gbit/s -> GB/s
}

double GpuPeakBandwidthGbps(int bus_width_bits, int memory_clock_mhz) {
  if (bus_width_bits <= 0 || memory_clock_mhz <= 0) return 0;
  return static_cast<double>(bus_width_bits) / 8.0 * memory_clock_mhz * 1e6 * 2.0 / 1e9;
}

}  // namespace moetune
