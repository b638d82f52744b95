#pragma once
/// Placement across several devices (two GPUs, a GPU and RPC hosts): which
/// layers go to which device and which layers' routed experts stay in host
/// memory, so that every device fits its own budget and as many expert bytes
/// as possible are on a device.
///
/// Why not `-ts` proportions with `--n-cpu-moe N`: --n-cpu-moe keeps the
/// experts of the *first* N layers on the CPU, and those layers sit on the
/// first device, so the experts that stay on devices pile onto the last one,
/// which overflows (the manual fix is one -ot rule per device plus a hand-made
/// -ts). The plan instead writes `-dev A,B -ts` as whole layer counts (the
/// last device's count includes the output head, slot n_layer, so the counts
/// land exactly: model/weight_placement.h) and one `-ot` rule that keeps the
/// chosen layers' experts on the CPU, a few at the start of each device's range.
///
/// Search: every split of the layers into contiguous ranges for up to three
/// devices (O(n^2) splits, each O(1) with prefix sums, each device's expert
/// count found by a scan), by the weights, KV cache and state per layer and
/// the compute buffers of a reference placement; then the chosen split is
/// evaluated exactly (compute buffers simulated for it) and a device that does
/// not fit moves one more layer's experts to the CPU until it does. More than
/// three devices: layers in proportion to the budgets, then the same fill.

#include <string>
#include <vector>

#include "config/server_config.h"
#include "plan/placement.h"

namespace moetune {

/// The chosen placement across devices.
struct DeviceSplitPlan {
  std::vector<int> layers;             // per device: repeating layers (the last also the output)
  std::vector<int> cpu_expert_layers;  // layers whose routed experts stay in host memory
  PlacementOption option;              // its exact memory map (option.devices per device)
  std::vector<int64_t> headroom;       // per device: budget - margin - use (negative: overflow)
  bool fits = false;                   // every device fits
  int splits_searched = 0;
  int evaluations = 0;  // exact evaluations (compute buffers simulated)
  std::vector<std::string> notes;
};

/// Plans `model` (MoE: experts may stay on the CPU; dense: whole layers only,
/// every layer on a device or the plan does not fit) across `devices` for the
/// context and margin of `request` (request.vram_free is not used).
Result<DeviceSplitPlan> PlanAcrossDevices(const GgufModel& model, const ModelArch& arch,
                                          const WeightMap& weights, const PlanRequest& request,
                                          const std::vector<DeviceBudget>& devices);

/// Every order of `devices` but their own (-dev; the last device holds the
/// output head), for up to three devices (3! = 6 orders, each a split search
/// of its own); none for more.
std::vector<std::vector<DeviceBudget>> OtherDeviceOrders(const std::vector<DeviceBudget>& devices);

/// The plan across request.devices in the best order of them (-dev; the last
/// device holds the output head, so the order changes what fits): for up to
/// three devices of one kind, every order is planned and another than the
/// engine's is taken only when it fits where the engine's does not, or keeps
/// fewer layers' experts in host memory. Devices of different kinds (a GPU and
/// RPC hosts) keep llama.cpp's order, whose speed tune measures instead.
struct OrderedSplitPlan {
  std::vector<DeviceBudget> devices;  // in the chosen order
  DeviceSplitPlan plan;
  std::string why;  // why the order differs from the engine's; "" when it does not
};
Result<OrderedSplitPlan> PlanDeviceOrder(const GgufModel& model, const ModelArch& arch,
                                         const WeightMap& weights, const PlanRequest& request);

/// PlanPlacement's answer for request.devices (two or more): the plan's
/// chosen option (in PlanDeviceOrder's order), its configuration and each
/// device's share.
Status PlanAcrossDevicesInto(const GgufModel& model, const ModelArch& arch,
                             const WeightMap& weights, const PlanRequest& request, Plan* plan);

/// For each N = 0..n_layer: the split (layers per device, the output not
/// counted) that, with N layers' routed experts kept in host memory as
/// CpuExpertsFrom::kPerDevice shares them out, leaves the most room on the
/// tightest device (every split for up to three devices, by prefix sums and
/// the compute buffers of a reference placement; more devices: in proportion
/// to the budgets). The placements tune searches across devices, N playing
/// the part --n-cpu-moe plays on one GPU.
Result<std::vector<std::vector<int>>> SplitsByCpuLayers(const GgufModel& model,
                                                        const ModelArch& arch,
                                                        const WeightMap& weights,
                                                        const PlanRequest& request,
                                                        const std::vector<DeviceBudget>& devices);

/// The llama-server placement of N layers' experts on the CPU across
/// `devices` split as `layers` (SplitsByCpuLayers): -ngl 99, -dev, -ts as
/// layer counts (the last device's count includes the output head), the
/// experts as CpuExpertsFrom::kPerDevice shares them out.
Placement PerDevicePlacement(const std::vector<DeviceBudget>& devices,
                             const std::vector<int>& layers, int n_layer, int n);

/// The llama-server placement of a split plan: -ngl 99, -dev, -ts as layer
/// counts (the last device's count includes the output head) and one -ot rule
/// for the experts on the CPU.
Placement DeviceSplitPlacement(const DeviceSplitPlan& plan,
                               const std::vector<DeviceBudget>& devices);

}  // namespace moetune
