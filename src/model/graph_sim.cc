#include "model/graph_sim.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "util/checked.h"

namespace moetune {

int64_t SimTypeSize(SimType t) {
  switch (t) {
    case SimType::kF32:
    case SimType::kI32:
      return 4;
    case SimType::kF16:
      return 2;
    case SimType::kI64:
      return 8;
    case SimType::kWeight:
      return 1;
  }
  return 4;
}

SimGraph::Id SimGraph::Add(SimTensor tensor) {
  tensors_.push_back(std::move(tensor));
  visited_.push_back(0);
  return static_cast<Id>(tensors_.size() - 1);
}

// ggml_nbytes (ggml/src/ggml.c) for block size 1: the element size plus the
// distance to the last element along every dimension.
int64_t SimGraph::Nbytes(const SimTensor& tensor) {
  std::optional<uint64_t> n = static_cast<uint64_t>(SimTypeSize(tensor.type));
  for (int i = 0; i < 4 && n; ++i) {
    if (tensor.ne[i] <= 0 || tensor.nb[i] < 0) return 0;
    const auto step =
        CheckedMul(static_cast<uint64_t>(tensor.ne[i] - 1), static_cast<uint64_t>(tensor.nb[i]));
    n = step ? CheckedAdd(*n, *step) : std::nullopt;
  }
  if (!n || *n > static_cast<uint64_t>(INT64_MAX / 4)) {
    overflowed_ = true;
    return 0;
  }
  return static_cast<int64_t>(*n);
}

// ggml_new_tensor: row-major strides.
void SimGraph::Contiguous(SimTensor& tensor) {
  std::optional<uint64_t> stride = static_cast<uint64_t>(SimTypeSize(tensor.type));
  for (int i = 0; i < 4; ++i) {
    if (!stride || *stride > static_cast<uint64_t>(INT64_MAX / 4)) {
      overflowed_ = true;
      stride = 0;
    }
    tensor.nb[i] = static_cast<int64_t>(*stride);
    stride = CheckedMul(*stride, static_cast<uint64_t>(std::max<int64_t>(tensor.ne[i], 0)));
  }
  tensor.nbytes = Nbytes(tensor);
}

SimGraph::Id SimGraph::Input(SimType type, SimNe ne, std::string name) {
  SimTensor x;
  x.type = type;
  x.ne = ne;
  x.input = true;
  x.name = std::move(name);
  Contiguous(x);
  return Add(std::move(x));
}

SimGraph::Id SimGraph::Weight(SimNe ne, int64_t nbytes, int device, std::string name) {
  SimTensor x;
  x.type = SimType::kWeight;
  x.ne = ne;
  Contiguous(x);
  x.nbytes = nbytes;
  x.weight = true;
  x.buffer = static_cast<int8_t>(device);
  x.name = std::move(name);
  return Add(std::move(x));
}

SimGraph::Id SimGraph::Cache(SimType type, SimNe ne, int device, std::string name) {
  SimTensor x;
  x.type = type;
  x.ne = ne;
  x.buffer = static_cast<int8_t>(device);
  x.name = std::move(name);
  Contiguous(x);
  return Add(std::move(x));
}

SimGraph::Id SimGraph::View(Id a, SimNe ne, SimNe nb, int64_t offset, std::string name) {
  SimTensor x;
  const SimTensor& src = t(a);
  x.type = src.type;
  x.ne = ne;
  x.nb = nb;
  x.op = SimOp::kView;
  x.src[0] = a;
  // A view of a view points at the memory's owner (ggml_view_impl).
  x.view_src = src.is_view() ? src.view_src : a;
  x.view_offs = (src.is_view() ? src.view_offs : 0) + offset;
  // ggml_new_tensor_impl leaves a view's buffer unset; the scheduler and the
  // allocator look through view_src.
  x.name = name.empty() ? src.name + " (view)" : std::move(name);
  x.nbytes = Nbytes(x);
  return Add(std::move(x));
}

SimGraph::Id SimGraph::ViewRows(Id a, SimNe ne, int64_t offset, std::string name) {
  const SimTensor& src = t(a);
  SimNe nb = src.nb;
  // Keep the source's row stride; higher dims follow the requested shape.
  nb[2] = nb[1] * ne[1];
  nb[3] = nb[2] * ne[2];
  return View(a, ne, nb, offset, std::move(name));
}

SimGraph::Id SimGraph::Reshape(Id a, SimNe ne, std::string name) {
  SimTensor probe;
  probe.type = t(a).type;
  probe.ne = ne;
  Contiguous(probe);
  return View(a, ne, probe.nb, 0, name.empty() ? t(a).name + " (reshaped)" : std::move(name));
}

SimGraph::Id SimGraph::Permute(Id a, int ax0, int ax1, int ax2, int ax3, std::string name) {
  const SimTensor& src = t(a);
  SimNe ne{}, nb{};
  const int axes[4] = {ax0, ax1, ax2, ax3};
  for (int i = 0; i < 4; ++i) {
    ne[static_cast<size_t>(axes[i])] = src.ne[static_cast<size_t>(i)];
    nb[static_cast<size_t>(axes[i])] = src.nb[static_cast<size_t>(i)];
  }
  return View(a, ne, nb, 0, name.empty() ? t(a).name + " (permuted)" : std::move(name));
}

SimGraph::Id SimGraph::Transpose(Id a, std::string name) {
  return Permute(a, 1, 0, 2, 3, name.empty() ? t(a).name + " (transposed)" : std::move(name));
}

SimGraph::Id SimGraph::CopyInto(Id dst, const std::vector<Id>& srcs, std::string name) {
  const SimTensor& d = t(dst);
  SimTensor x;
  x.type = d.type;
  x.ne = d.ne;
  x.nb = d.nb;
  x.op = SimOp::kCpy;
  x.view_src = d.is_view() ? d.view_src : dst;
  x.view_offs = d.view_offs;
  x.name = name.empty() ? d.name + " (copy)" : std::move(name);
  size_t i = 0;
  for (Id s : srcs) x.src[i++] = s;
  x.src[i] = dst;
  x.nbytes = Nbytes(x);
  return Add(std::move(x));
}

SimGraph::Id SimGraph::New(SimOp op, SimType type, SimNe ne, std::vector<Id> srcs,
                           std::string name) {
  SimTensor x;
  x.type = type;
  x.ne = ne;
  x.op = op;
  x.name = std::move(name);
  for (size_t i = 0; i < srcs.size() && i < x.src.size(); ++i) x.src[i] = srcs[i];
  Contiguous(x);
  return Add(std::move(x));
}

SimGraph::Id SimGraph::Inplace(std::vector<Id> srcs, std::string name) {
  const SimTensor& a = t(srcs.front());
  return New(SimOp::kInplace, a.type, a.ne, std::move(srcs), std::move(name));
}

SimGraph::Id SimGraph::Rope(Id a, Id pos, std::string name) {
  return New(SimOp::kRope, t(a).type, t(a).ne, {a, pos}, std::move(name));
}

// ggml_mul_mat: [a.ne1, b.ne1, b.ne2, b.ne3], f32.
SimGraph::Id SimGraph::MulMat(Id w, Id x, std::string name) {
  const SimNe ne{t(w).ne[1], t(x).ne[1], t(x).ne[2], t(x).ne[3]};
  return New(SimOp::kMulMat, SimType::kF32, ne, {w, x}, std::move(name));
}

// ggml_mul_mat_id: [as.ne1, ids.ne0, b.ne2, 1], f32.
SimGraph::Id SimGraph::MulMatId(Id w, Id x, Id ids, std::string name) {
  const SimNe ne{t(w).ne[1], t(ids).ne[0], t(x).ne[2], 1};
  return New(SimOp::kMulMatId, SimType::kF32, ne, {w, x, ids}, std::move(name));
}

// ggml_get_rows: [a.ne0, b.ne0, b.ne1, b.ne2], f32 (i32 for i32 sources).
SimGraph::Id SimGraph::GetRows(Id a, Id rows, std::string name) {
  const SimNe ne{t(a).ne[0], t(rows).ne[0], t(rows).ne[1], t(rows).ne[2]};
  const SimType type = t(a).type == SimType::kI32 ? SimType::kI32 : SimType::kF32;
  return New(SimOp::kGetRows, type, ne, {a, rows}, std::move(name));
}

SimGraph::Id SimGraph::Cont(Id a, std::string name) {
  return New(SimOp::kOther, t(a).type, t(a).ne, {a}, std::move(name));
}

// ggml_flash_attn_ext: [v.ne0, q.ne2, q.ne1, q.ne3], f32 (heads before tokens).
SimGraph::Id SimGraph::FlashAttn(Id q, Id k, Id v, Id mask, Id sinks, std::string name) {
  const SimNe ne{t(v).ne[0], t(q).ne[2], t(q).ne[1], t(q).ne[3]};
  std::vector<Id> srcs = {q, k, v, mask};
  if (sinks >= 0) srcs.push_back(sinks);
  return New(SimOp::kFlashAttn, SimType::kF32, ne, std::move(srcs), std::move(name));
}

SimGraph::Id SimGraph::Concat(Id a, Id b, int dim, std::string name) {
  SimNe ne = t(a).ne;
  ne[static_cast<size_t>(dim)] += t(b).ne[static_cast<size_t>(dim)];
  return New(SimOp::kOther, t(a).type, ne, {a, b}, std::move(name));
}

// ggml_visit_parents, iteratively (graphs of many layers are deep).
void SimGraph::Visit(Id root) {
  struct Frame {
    Id id;
    size_t next_src;
  };
  if (visited_[static_cast<size_t>(root)]) return;
  visited_[static_cast<size_t>(root)] = 1;
  std::vector<Frame> stack = {{root, 0}};
  while (!stack.empty()) {
    Frame& f = stack.back();
    const SimTensor& x = t(f.id);
    if (f.next_src < x.src.size()) {
      const Id s = x.src[f.next_src++];
      if (s >= 0 && !visited_[static_cast<size_t>(s)]) {
        visited_[static_cast<size_t>(s)] = 1;
        stack.push_back({s, 0});
      }
      continue;
    }
    (x.op == SimOp::kNone ? leafs_ : nodes_).push_back(f.id);
    stack.pop_back();
  }
}

void SimGraph::Expand(Id id) { Visit(id); }

std::string SimGraph::Dump() const {
  std::string out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const SimTensor& x = t(nodes_[i]);
    if (x.op == SimOp::kView) continue;
    out += fmt::format("{:4} {:24} {:>10}", i, x.name, x.nbytes);
    for (Id s : x.src) {
      if (s >= 0) out += fmt::format(" | {} ({})", t(s).name, t(s).nbytes);
    }
    out += '\n';
  }
  return out;
}

}  // namespace moetune
