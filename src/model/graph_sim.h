#pragma once
/// A model of a ggml compute graph at the level ggml's allocator and
/// scheduler see it: every tensor's shape, strides and byte size, its sources,
/// whether it is a view, a graph input or output, whether its op may run in
/// place, and which device's buffer already holds it (weights, KV cache).
/// llama.cpp's reserve graphs are rebuilt with it (model/reserve_graph.h) and
/// then scheduled and allocated (model/graph_alloc_sim.h) to predict the
/// compute buffer of every device without running the engine.
///
/// Shape rules mirror ggml/src/ggml.c (upstream ggml-org/llama.cpp): the
/// result shapes of ggml_mul_mat, ggml_mul_mat_id, ggml_get_rows,
/// ggml_flash_attn_ext, ggml_ssm_conv, ...; views (ggml_view_*, ggml_reshape_*,
/// ggml_permute, ggml_transpose, and ggml_cpy / ggml_set_rows whose result is
/// a view of the destination) allocate nothing. Node order follows
/// ggml_build_forward_expand (ggml_visit_parents: sources left to right, then
/// the node; source-less tensors become leafs).
///
/// Byte sizes use checked arithmetic: a shape whose size overflows 64 bits
/// marks the graph as overflowed (overflowed()) instead of wrapping.

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace moetune {

/// The ops the simulation distinguishes (ggml_op values that matter to the
/// allocator and the scheduler).
enum class SimOp : uint8_t {
  kNone,       // leaf: input, weight, cache, or a scheduler copy
  kView,       // GGML_OP_VIEW, RESHAPE, PERMUTE, TRANSPOSE (ggml_is_view_op)
  kCpy,        // ggml_cpy / ggml_set_rows: result is a view of the destination
  kInplace,    // an op ggml_op_can_inplace() accepts (ADD, MUL, RMS_NORM, ROPE, ...)
  kRope,       // GGML_OP_ROPE (in place; never placed by its weights)
  kFlashAttn,  // GGML_OP_FLASH_ATTN_EXT (never placed by its weights)
  kMulMat,     // GGML_OP_MUL_MAT
  kMulMatId,   // GGML_OP_MUL_MAT_ID
  kGetRows,    // GGML_OP_GET_ROWS
  kOther,      // any other op producing a new tensor (CONT, GLU, CONCAT, ...)
};

/// Element types of compute tensors (weights carry their byte size instead).
enum class SimType : uint8_t { kF32, kF16, kI32, kI64, kWeight };

int64_t SimTypeSize(SimType t);

using SimNe = std::array<int64_t, 4>;

struct SimTensor {
  SimNe ne{1, 1, 1, 1};
  SimNe nb{0, 0, 0, 0};  // strides in bytes
  int64_t nbytes = 0;    // ggml_nbytes
  SimType type = SimType::kF32;
  SimOp op = SimOp::kNone;
  std::array<int32_t, 6> src{-1, -1, -1, -1, -1, -1};
  int32_t view_src = -1;  // the tensor whose memory a view uses
  int64_t view_offs = 0;
  bool input = false;   // GGML_TENSOR_FLAG_INPUT
  bool output = false;  // GGML_TENSOR_FLAG_OUTPUT
  bool weight = false;  // lives in a buffer with usage WEIGHTS
  int8_t buffer = -1;   // device whose (non-compute) buffer already holds it; -1 = none
  std::string name;     // for dumps and tests (llama.cpp's cb() names)

  bool is_view() const { return view_src >= 0; }
};

/// A graph under construction, with ggml's shape rules.
class SimGraph {
 public:
  using Id = int32_t;

  const SimTensor& t(Id id) const { return tensors_[static_cast<size_t>(id)]; }
  SimTensor& t(Id id) { return tensors_[static_cast<size_t>(id)]; }
  const std::vector<SimTensor>& tensors() const { return tensors_; }
  const std::vector<Id>& nodes() const { return nodes_; }
  const std::vector<Id>& leafs() const { return leafs_; }
  bool overflowed() const { return overflowed_; }

  // Leafs.
  /// A graph input (ggml_set_input), filled by llama.cpp before compute.
  Id Input(SimType type, SimNe ne, std::string name);
  /// A weight of `nbytes` bytes held by `device`'s model buffer.
  Id Weight(SimNe ne, int64_t nbytes, int device, std::string name);
  /// A KV-cache / recurrent-state tensor held by `device`'s context buffer.
  Id Cache(SimType type, SimNe ne, int device, std::string name);

  // Views (no memory of their own).
  Id View(Id a, SimNe ne, SimNe nb, int64_t offset, std::string name = {});
  /// ggml_view_Nd with contiguous-from-`a` strides for the first dims.
  Id ViewRows(Id a, SimNe ne, int64_t offset, std::string name = {});
  Id Reshape(Id a, SimNe ne, std::string name = {});
  Id Permute(Id a, int ax0, int ax1, int ax2, int ax3, std::string name = {});
  Id Transpose(Id a, std::string name = {});
  /// ggml_cpy(a, b) and ggml_set_rows(b, a, idx): a view of the destination `dst`.
  Id CopyInto(Id dst, const std::vector<Id>& srcs, std::string name = {});

  // Ops with a result tensor of their own.
  /// Same shape and type as `a` (ADD, MUL, DIV, SCALE, CLAMP, RMS_NORM, SOFT_MAX,
  /// UNARY, ...): ops ggml may run in place.
  Id Inplace(std::vector<Id> srcs, std::string name);
  Id Rope(Id a, Id pos, std::string name);
  /// A new contiguous tensor of `type` and `ne` computed from `srcs`.
  Id New(SimOp op, SimType type, SimNe ne, std::vector<Id> srcs, std::string name);
  Id MulMat(Id w, Id x, std::string name);
  Id MulMatId(Id w, Id x, Id ids, std::string name);
  Id GetRows(Id a, Id rows, std::string name);
  Id Cont(Id a, std::string name);
  Id FlashAttn(Id q, Id k, Id v, Id mask, Id sinks, std::string name);
  Id Concat(Id a, Id b, int dim, std::string name);

  /// Adds a tensor as it is (the scheduler's copies and dependencies).
  Id AddRaw(SimTensor tensor) { return Add(std::move(tensor)); }

  /// ggml_build_forward_expand: appends `id` and everything it depends on.
  void Expand(Id id);
  /// Marks a tensor as a graph output (ggml_set_output).
  void SetOutput(Id id) { t(id).output = true; }

  /// One line per non-view node, like GGML_SCHED_DEBUG's listing (for tests
  /// and for comparing with the engine).
  std::string Dump() const;

 private:
  Id Add(SimTensor tensor);
  int64_t Nbytes(const SimTensor& tensor);
  void Contiguous(SimTensor& tensor);
  void Visit(Id id);

  std::vector<SimTensor> tensors_;
  std::vector<Id> nodes_;
  std::vector<Id> leafs_;
  std::vector<uint8_t> visited_;
  bool overflowed_ = false;
};

}  // namespace moetune
