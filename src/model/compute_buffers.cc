#include "model/compute_buffers.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/graph_alloc_sim.h"
#include "model/reserve_graph.h"

namespace moetune {

namespace {

// ggml's TENSOR_ALIGNMENT for CPU and RPC (a remote CPU) buffers; CUDA
// buffers align to 128 bytes (ggml_backend_cuda_buffer_type_get_alignment).
constexpr int64_t kCpuAlignment = 32;
constexpr int64_t kCudaAlignment = 128;
// GGML_OP_OFFLOAD_MIN_BATCH's default (ggml-cuda.cu).
constexpr int64_t kCudaOffloadMinBatch = 32;

}  // namespace

bool PipelineParallel(const WeightPlacement& placement, int n_layer) {
  return placement.DeviceCount() > 1 && placement.n_gpu_layers > n_layer &&
         !placement.HasTensorOverrides();
}

ComputeEstimator::ComputeEstimator(const GgufModel& model, const ModelArch& arch)
    : model_(model), arch_(arch), index_(IndexTensors(model)) {}

Result<ComputeBuffers> EstimateComputeBuffers(const GgufModel& model, const ModelArch& arch,
                                              const ContextParams& cp,
                                              const WeightPlacement& placement, DeviceKind kind) {
  return ComputeEstimator(model, arch).Estimate(cp, placement, kind);
}

Result<ComputeBuffers> ComputeEstimator::Estimate(const ContextParams& cp,
                                                  const WeightPlacement& placement,
                                                  DeviceKind kind) const {
  return Estimate(cp, placement, std::vector<DeviceKind>{kind});
}

Result<ComputeBuffers> ComputeEstimator::Estimate(const ContextParams& cp,
                                                  const WeightPlacement& placement,
                                                  const std::vector<DeviceKind>& kinds) const {
  MOETUNE_ASSIGN_OR_RETURN(const ContextLayout layout, LayoutContext(cp));
  MOETUNE_ASSIGN_OR_RETURN(SimGraph graph,
                           BuildReserveGraph(model_, arch_, index_, cp, layout, placement));
  const int n = placement.DeviceCount();
  std::vector<SimBackend> backends;
  for (int i = 0; i < n; ++i) {
    const DeviceKind kind = kinds.empty()
                                ? DeviceKind::kCuda
                                : kinds[std::min(static_cast<size_t>(i), kinds.size() - 1)];
    SimBackend dev;
    dev.name = fmt::format("{}{}", kind == DeviceKind::kCuda ? "CUDA" : "RPC", i);
    dev.offload_min_batch = kind == DeviceKind::kCuda ? kCudaOffloadMinBatch : 0;
    dev.alignment = kind == DeviceKind::kCuda ? kCudaAlignment : kCpuAlignment;
    backends.push_back(dev);
  }
  backends.push_back({"CPU", 0, kCpuAlignment});
  const int n_layer = static_cast<int>(arch_.layers.size());
  const SimBufferSizes sizes = SimulateComputeBuffers(
      graph, backends, PipelineParallel(placement, n_layer) ? kPipelineCopies : 1);
  ComputeBuffers out;
  out.n_splits = sizes.n_splits;
  out.host = sizes.bytes.back();
  for (int i = 0; i < n; ++i) {
    out.per_device.push_back(sizes.bytes[static_cast<size_t>(i)]);
    out.device += out.per_device.back();
  }
  return out;
}

Result<int64_t> EstimateHostOnlyCompute(const GgufModel& model, const ModelArch& arch,
                                        const ContextParams& cp) {
  MOETUNE_ASSIGN_OR_RETURN(const ComputeBuffers b,
                           EstimateComputeBuffers(model, arch, cp, WeightPlacement{}));
  return b.host;
}

}  // namespace moetune
