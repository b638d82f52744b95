#include "speed/rpc_link.h"

#include <algorithm>

namespace moetune {

double RpcPayloadRate(const AcceleratorSpec& device, const CalibrationConstants& c) {
  const double socket = std::max(0.01, c.rpc_link_gbps);
  return device.net_gbps > 0 ? std::min(socket, device.net_gbps) : socket;
}

RpcLinkTime RpcLinkSeconds(const AcceleratorSpec& device, const CalibrationConstants& c,
                           const RpcTraffic& traffic) {
  RpcLinkTime t;
  const double per_trip_us = c.rpc_handover_us + std::max(0.0, device.net_rtt_us);
  t.latency_s = traffic.round_trips * per_trip_us * 1e-6;
  t.transfer_s = traffic.bytes / (RpcPayloadRate(device, c) * 1e9);
  return t;
}

}  // namespace moetune
