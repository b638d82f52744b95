#pragma once
/// Schedules and allocates a simulated graph (model/graph_sim.h) the way
/// ggml does when llama.cpp reserves its compute buffers, and returns the
/// compute buffer size of every device.
///
/// Mirrors, from upstream ggml-org/llama.cpp:
///  - ggml/src/ggml-backend.cpp ggml_backend_sched_split_graph: pass 1 places
///    ops by their pre-allocated sources (a weight's device runs the op, unless
///    a device with op offload takes ops on host weights, e.g. CUDA for batches
///    of at least 32 tokens), graph inputs on the CPU; pass 2 expands device
///    assignments down and up (the CPU last), pass 3 places what is left where
///    most sources are, pass 4 gives views their source's device; pass 5 cuts
///    the graph into splits and adds a copy of every source that lives on
///    another device (a "split input"), allocated at the start of its split.
///    With pipeline parallelism (n_copies > 1, ggml_backend_sched_new's
///    `parallel`), every graph input a node reads gets n_copies copies on its
///    own backend (the first is the input itself) and every split input
///    n_copies copies on the split's backend; all of them are flagged input and
///    output (never freed, never overwritten in place) and added to the graph
///    as leafs ahead of the graph's own, so they are allocated first.
///  - ggml/src/ggml-alloc.c ggml_gallocr_alloc_graph_impl: leafs first, then
///    nodes in order; a node reuses its parent's memory when its op may run in
///    place and the parent has no other user; memory is freed when the last
///    user (or view) is done; graph outputs are never freed; each device's
///    dynamic allocator takes the best-fitting free block or grows at the end
///    (ggml_dyn_tallocr_alloc), and the buffer is its high-water mark.

#include <cstdint>
#include <string>
#include <vector>

#include "model/graph_sim.h"

namespace moetune {

/// One backend of the scheduler, in priority order; the CPU is the last one.
struct SimBackend {
  std::string name;  // "CUDA0", "RPC0", "CPU"
  /// Batch size from which this device computes ops whose weights are in
  /// host memory (the weights are copied in as split inputs): CUDA's
  /// GGML_OP_OFFLOAD_MIN_BATCH (32). 0 = never (CPU, RPC).
  int64_t offload_min_batch = 0;
  int64_t alignment = 32;  // the compute buffer type's alignment
};

struct SimBufferSizes {
  std::vector<int64_t> bytes;  // per backend, same order as the input
  int n_splits = 0;
  int64_t split_input_bytes = 0;  // bytes of all split-input copies (for reports)
};

/// Schedules `graph` over `backends` (weights and caches name their device by
/// index into it) and simulates the allocation, with `n_copies` copies of the
/// scheduler's inputs (1, or GGML_SCHED_MAX_COPIES with pipeline
/// parallelism). The graph is modified (split inputs replace sources), so pass
/// a copy to keep the original.
SimBufferSizes SimulateComputeBuffers(SimGraph& graph, const std::vector<SimBackend>& backends,
                                      int n_copies = 1);

}  // namespace moetune
