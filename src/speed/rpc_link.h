#pragma once
/// The link between llama.cpp and one RPC device (ggml-rpc-server): what its
/// traffic costs. Every switch into or out of the device is a round trip of
/// the RPC protocol (ggml/src/ggml-rpc/ggml-rpc.cpp: set_tensor / get_tensor of
/// the activations, graph_compute), and the bytes cross the socket and, for a
/// remote host, the network.
///
/// On loopback the calibrated constants alone describe the link
/// (rpc_link_gbps: the socket's copy rate; rpc_handover_us: one round trip);
/// a network adds its payload rate and round-trip time (AcceleratorSpec
/// net_gbps and net_rtt_us, from what-if presets or the user's figures).

#include "speed/calibration.h"
#include "speed/machine_spec.h"

namespace moetune {

/// One phase's traffic with the device.
struct RpcTraffic {
  int round_trips = 0;  // device switches (each one synchronous call and its answer)
  double bytes = 0;     // activation bytes copied
};

struct RpcLinkTime {
  double latency_s = 0;   // waiting for answers
  double transfer_s = 0;  // moving the bytes
  double total() const { return latency_s + transfer_s; }
};

/// The payload rate of the device's link, 1e9 B/s: the socket's calibrated
/// rate, or the network's when that is slower (TCP streams the copy through
/// both, so the slower one sets the pace).
double RpcPayloadRate(const AcceleratorSpec& device, const CalibrationConstants& c);

/// The time `traffic` takes on the device's link.
RpcLinkTime RpcLinkSeconds(const AcceleratorSpec& device, const CalibrationConstants& c,
                           const RpcTraffic& traffic);

}  // namespace moetune
