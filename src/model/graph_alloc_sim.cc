#include "model/graph_alloc_sim.h"

#include <algorithm>
#include <map>
#include <utility>

namespace moetune {
namespace {

using Id = SimGraph::Id;

// ggml_dyn_tallocr with one chunk (the CPU, CUDA and RPC buffer types have no
// practical maximum size): free blocks sorted by offset, the last one unbounded.
class DynAlloc {
 public:
  explicit DynAlloc(int64_t alignment) : alignment_(std::max<int64_t>(alignment, 1)) {
    blocks_.push_back({0, kUnbounded});
  }

  int64_t Align(int64_t size) const { return (size + alignment_ - 1) / alignment_ * alignment_; }

  int64_t Alloc(int64_t size) {
    size = Align(size);
    // Best fit among every block but the last.
    size_t best = blocks_.size();
    int64_t best_size = kUnbounded;
    for (size_t i = 0; i + 1 < blocks_.size(); ++i) {
      if (blocks_[i].size >= size && blocks_[i].size <= best_size) {
        best = i;
        best_size = blocks_[i].size;
      }
    }
    if (best == blocks_.size()) best = blocks_.size() - 1;  // grow at the end
    const int64_t offset = blocks_[best].offset;
    blocks_[best].offset += size;
    blocks_[best].size -= size;
    if (blocks_[best].size == 0) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    max_size_ = std::max(max_size_, offset + size);
    return offset;
  }

  void Free(int64_t offset, int64_t size) {
    size = Align(size);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      Block& b = blocks_[i];
      if (b.offset + b.size == offset) {  // ends where the freed memory starts
        b.size += size;
        if (i + 1 < blocks_.size() && b.offset + b.size == blocks_[i + 1].offset) {
          b.size += blocks_[i + 1].size;
          blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i + 1));
        }
        return;
      }
      if (offset + size == b.offset) {  // starts where the freed memory ends
        b.offset = offset;
        b.size += size;
        if (i > 0 && blocks_[i - 1].offset + blocks_[i - 1].size == b.offset) {
          blocks_[i - 1].size += b.size;
          blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
        }
        return;
      }
    }
    auto pos = std::lower_bound(blocks_.begin(), blocks_.end(), offset,
                                [](const Block& b, int64_t off) { return b.offset < off; });
    blocks_.insert(pos, {offset, size});
  }

  int64_t max_size() const { return max_size_; }

 private:
  static constexpr int64_t kUnbounded = INT64_MAX / 2;
  struct Block {
    int64_t offset;
    int64_t size;
  };
  int64_t alignment_;
  std::vector<Block> blocks_;
  int64_t max_size_ = 0;
};

bool SameLayout(const SimTensor& a, const SimTensor& b) {
  return a.type == b.type && a.ne == b.ne && a.nb == b.nb;
}

// CUDA's get_op_batch_size (ggml-cuda.cu), used by its offload_op.
int64_t OpBatch(const SimTensor& x) {
  switch (x.op) {
    case SimOp::kGetRows:
      return 0;
    case SimOp::kMulMat:
      return x.ne[1];
    case SimOp::kMulMatId:
    case SimOp::kRope:
      return x.ne[2];
    default:
      return x.ne[1] * x.ne[2] * x.ne[3];
  }
}

class Scheduler {
 public:
  Scheduler(SimGraph& g, const std::vector<SimBackend>& backends, int n_copies)
      : g_(g),
        backends_(backends),
        cpu_(static_cast<int>(backends.size()) - 1),
        n_copies_(std::max(n_copies, 1)) {}

  SimBufferSizes Run();

 private:
  int& Backend(Id id) {
    if (static_cast<size_t>(id) >= backend_.size()) backend_.resize(g_.tensors().size(), -1);
    return backend_[static_cast<size_t>(id)];
  }
  int BufferDevice(const SimTensor& x) const {
    return x.is_view() ? g_.t(x.view_src).buffer : x.buffer;
  }
  bool BufferSupported(Id id, int b);
  int FromCur(Id id);
  void Assign();
  void Split();
  Id InputCopy(Id s, int backend);
  Id SplitInputCopies(Id s, int backend);
  void CopyGraphInput(Id s);
  void CopyUnreadInputs();
  SimBufferSizes Allocate();
  SimBufferSizes Sizes(const std::vector<DynAlloc>& allocs) const;

  SimGraph& g_;
  const std::vector<SimBackend>& backends_;
  int cpu_;
  int n_copies_;
  std::vector<int> backend_;
  // Pipeline parallelism: the graph inputs already copied, and the leafs the
  // scheduler puts ahead of the graph's own (graph inputs' copies, then every
  // split input's copies, in split order).
  std::vector<uint8_t> copied_input_;
  std::vector<Id> copy_leafs_;
  // The graph the allocator sees (ggml_backend_sched's graph_copy).
  std::vector<Id> copy_nodes_;
  std::vector<int> copy_backend_;
  int n_splits_ = 0;
  int64_t split_input_bytes_ = 0;
};

// ggml_backend_sched_buffer_supported: every backend here supports only its
// own buffer type (CUDA, RPC and CPU buffers are distinct).
bool Scheduler::BufferSupported(Id id, int b) {
  const SimTensor& x = g_.t(id);
  const int dev = BufferDevice(x);
  if (dev >= 0) return dev == b;
  int assigned = Backend(id);
  if (assigned == -1 && x.is_view()) assigned = Backend(x.view_src);
  return assigned == b;
}

// ggml_backend_sched_backend_id_from_cur.
int Scheduler::FromCur(Id id) {
  const SimTensor& x = g_.t(id);
  if (const int dev = BufferDevice(x); dev >= 0) return dev;
  if (x.input) return cpu_;
  if (x.op == SimOp::kRope || x.op == SimOp::kFlashAttn) return -1;
  for (Id s : x.src) {
    if (s < 0) continue;
    const SimTensor& src = g_.t(s);
    if (!src.weight) continue;
    const int dev = BufferDevice(src);
    if (dev == cpu_) {
      for (int b = 0; b < cpu_; ++b) {
        const int64_t min_batch = backends_[static_cast<size_t>(b)].offload_min_batch;
        if (min_batch > 0 && OpBatch(x) >= min_batch) return b;
      }
    }
    return dev;
  }
  return -1;
}

void Scheduler::Assign() {
  backend_.assign(g_.tensors().size(), -1);
  for (Id l : g_.leafs()) Backend(l) = FromCur(l);
  for (Id n : g_.nodes()) Backend(n) = FromCur(n);
  const auto& nodes = g_.nodes();
  auto expand = [&](bool down, bool gpu_only) {
    int cur = -1;
    for (size_t k = 0; k < nodes.size(); ++k) {
      const Id n = down ? nodes[k] : nodes[nodes.size() - 1 - k];
      if (g_.t(n).op == SimOp::kView) continue;
      int& b = Backend(n);
      if (b != -1) {
        cur = gpu_only && b == cpu_ ? -1 : b;
      } else if (cur != -1) {
        b = cur;  // every backend here supports every op
      }
    }
  };
  expand(true, true);    // pass 2.1: expand gpu down
  expand(false, true);   // expand gpu up
  expand(true, false);   // expand rest down
  expand(false, false);  // expand rest up
  // Pass 3: unassigned nodes go where most of their sources can be read.
  for (Id n : nodes) {
    if (g_.t(n).op == SimOp::kView || Backend(n) != -1) continue;
    int best = -1, best_count = -1;
    for (int b = 0; b <= cpu_; ++b) {
      int count = 0;
      for (Id s : g_.t(n).src) {
        if (s < 0) continue;
        const SimTensor& src = g_.t(s);
        const bool known = Backend(s) != -1 || (src.is_view() && Backend(src.view_src) != -1);
        if (known && BufferSupported(s, b)) ++count;
      }
      if (count > best_count) {
        best_count = count;
        best = b;
      }
    }
    Backend(n) = best;
  }
  // Pass 4: views follow their source; sources still unassigned follow their user.
  for (Id n : nodes) {
    const SimTensor& x = g_.t(n);
    if (x.is_view() && Backend(n) == -1) Backend(n) = Backend(x.view_src);
    for (Id s : x.src) {
      if (s < 0 || Backend(s) != -1) continue;
      const SimTensor& src = g_.t(s);
      Backend(s) = src.is_view() ? Backend(src.view_src) : Backend(n);
    }
    if (Backend(n) == -1) Backend(n) = 0;
  }
}

// The copy of split input `s` on `backend` (ggml_dup_tensor_layout: same
// shape and strides, a leaf of its own).
SimGraph::Id Scheduler::InputCopy(Id s, int backend) {
  SimTensor c;
  const SimTensor& src = g_.t(s);
  c.ne = src.ne;
  c.nb = src.nb;
  c.type = src.type;
  c.nbytes = src.nbytes;
  c.name = backends_[static_cast<size_t>(backend)].name + "#" + src.name;
  const Id cid = g_.AddRaw(std::move(c));
  backend_.resize(g_.tensors().size(), -1);
  Backend(cid) = backend;
  return cid;
}

// The copies of split input `s` on `backend`: one, or n_copies flagged input
// and output and allocated first (pipeline parallelism). Returns the one the
// reserve graph reads (copy 0, the scheduler's cur_copy).
SimGraph::Id Scheduler::SplitInputCopies(Id s, int backend) {
  const Id first = InputCopy(s, backend);
  if (n_copies_ == 1) return first;
  for (int c = 0; c < n_copies_; ++c) {
    const Id cid = c == 0 ? first : InputCopy(s, backend);
    g_.t(cid).input = g_.t(cid).output = true;
    copy_leafs_.push_back(cid);
  }
  return first;
}

// Pipeline parallelism: graph input `s` (read by a node) gets n_copies copies
// on its own backend, the first being `s` itself, all kept for the whole graph.
void Scheduler::CopyGraphInput(Id s) {
  if (copied_input_.size() < g_.tensors().size()) copied_input_.resize(g_.tensors().size(), 0);
  if (copied_input_[static_cast<size_t>(s)]) return;
  copied_input_[static_cast<size_t>(s)] = 1;
  g_.t(s).output = true;
  copy_leafs_.push_back(s);
  for (int c = 1; c < n_copies_; ++c) {
    const Id cid = InputCopy(s, Backend(s));
    g_.t(cid).input = g_.t(cid).output = true;
    copy_leafs_.push_back(cid);
  }
}

// The installed engine keeps n_copies of an input no node reads as well (the
// embeddings input of the path not taken): its CPU compute buffer is 72.08 MiB
// for Qwen3-30B-A3B on two RPC devices at 8K, four times the 16 MiB of inputs
// plus the two 4 MiB embeddings rows. (The copies are allocated together
// before anything else and never freed, so their order does not matter.)
void Scheduler::CopyUnreadInputs() {
  if (n_copies_ == 1) return;
  for (Id l : std::vector<Id>(g_.leafs())) {
    if (g_.t(l).input) CopyGraphInput(l);
  }
}

void Scheduler::Split() {
  const auto& nodes = g_.nodes();
  std::map<std::pair<Id, int>, Id> copies;  // (source, backend) -> copy
  struct SplitInfo {
    int backend;
    size_t start;
    std::vector<Id> inputs;
  };
  std::vector<SplitInfo> splits;
  size_t i = 0;
  while (i < nodes.size() && g_.t(nodes[i]).op == SimOp::kView) ++i;
  splits.push_back({i < nodes.size() ? Backend(nodes[i]) : cpu_, 0, {}});
  for (; i < nodes.size(); ++i) {
    const Id n = nodes[i];
    if (g_.t(n).op == SimOp::kView) continue;
    const int nb = Backend(n);
    SplitInfo* split = &splits.back();
    bool new_split = nb != split->backend;
    if (!new_split && !split->inputs.empty()) {
      // A weight from another device starts a new split, so that the memory of
      // the previous split's weight copies can be reused.
      for (Id s : g_.t(n).src) {
        if (s >= 0 && g_.t(s).weight && Backend(s) != split->backend &&
            !BufferSupported(s, split->backend)) {
          new_split = true;
          break;
        }
      }
    }
    if (new_split) {
      splits.push_back({nb, i, {}});
      split = &splits.back();
    }
    for (size_t j = 0; j < g_.t(n).src.size(); ++j) {
      const Id s = g_.t(n).src[j];
      if (s < 0) continue;
      if (n_copies_ > 1 && g_.t(s).input) CopyGraphInput(s);
      if (Backend(s) == split->backend || BufferSupported(s, split->backend)) continue;
      auto key = std::make_pair(s, split->backend);
      auto it = copies.find(key);
      if (it == copies.end()) {
        it = copies.emplace(key, SplitInputCopies(s, split->backend)).first;
        split->inputs.push_back(s);
        split_input_bytes_ += g_.t(s).nbytes;
      }
      g_.t(n).src[j] = it->second;
    }
  }
  n_splits_ = static_cast<int>(splits.size());
  // graph_copy: per split, a dependency on each input's source (so it lives
  // until the copy), the input copy, then the split's nodes.
  for (size_t k = 0; k < splits.size(); ++k) {
    const SplitInfo& s = splits[k];
    const size_t end = k + 1 < splits.size() ? splits[k + 1].start : nodes.size();
    for (Id input : s.inputs) {
      SimTensor dep;
      dep.name = g_.t(input).name + " (dep)";
      dep.view_src = g_.t(input).is_view() ? g_.t(input).view_src : input;
      dep.src[0] = input;
      dep.type = g_.t(input).type;
      const Id did = g_.AddRaw(std::move(dep));
      backend_.resize(g_.tensors().size(), -1);
      copy_nodes_.push_back(did);
      copy_backend_.push_back(Backend(input));
      const Id cid = copies.at({input, s.backend});
      copy_nodes_.push_back(cid);
      copy_backend_.push_back(s.backend);
    }
    for (size_t j = s.start; j < end; ++j) {
      copy_nodes_.push_back(nodes[j]);
      copy_backend_.push_back(Backend(nodes[j]));
    }
  }
}

SimBufferSizes Scheduler::Allocate() {
  const size_t n_tensors = g_.tensors().size();
  std::vector<int> children(n_tensors, 0), views(n_tensors, 0), buf(n_tensors, -1);
  std::vector<int64_t> addr(n_tensors, 0);
  std::vector<uint8_t> own(n_tensors, 0);
  std::vector<DynAlloc> allocs;
  for (const auto& b : backends_) allocs.emplace_back(b.alignment);

  auto external = [&](Id id) { return BufferDevice(g_.t(id)) >= 0; };
  auto free_node = [&](Id id) {
    const SimTensor& x = g_.t(id);
    if (x.output) return;
    allocs[static_cast<size_t>(buf[static_cast<size_t>(id)])].Free(addr[static_cast<size_t>(id)],
                                                                   x.nbytes);
    own[static_cast<size_t>(id)] = 0;
  };
  auto allocate = [&](Id id, int b) {
    const SimTensor& x = g_.t(id);
    const auto ui = static_cast<size_t>(id);
    if (own[ui] || external(id) || x.is_view()) return;
    own[ui] = 1;
    const bool can_inplace = x.op == SimOp::kInplace || x.op == SimOp::kRope;
    if (can_inplace) {
      for (Id p : x.src) {
        if (p < 0) continue;
        const auto up = static_cast<size_t>(p);
        const SimTensor& parent = g_.t(p);
        if (!own[up]) continue;  // external, a view, or not allocated here
        if (parent.output) continue;
        if (!SameLayout(x, parent)) continue;
        if (children[up] == 1 && views[up] == 0) {
          buf[ui] = buf[up];
          addr[ui] = addr[up];
          own[up] = 0;
          DynAlloc& a = allocs[static_cast<size_t>(buf[up])];
          const int64_t ps = a.Align(parent.nbytes), ns = a.Align(x.nbytes);
          if (ps > ns) a.Free(addr[up] + ns, ps - ns);
          return;
        }
      }
    }
    buf[ui] = b;
    addr[ui] = allocs[static_cast<size_t>(b)].Alloc(x.nbytes);
  };

  for (Id l : copy_leafs_) allocate(l, Backend(l));  // the scheduler's copies first
  for (Id l : g_.leafs()) allocate(l, Backend(l));
  for (size_t k = 0; k < copy_nodes_.size(); ++k) {
    const Id n = copy_nodes_[k];
    const SimTensor& x = g_.t(n);
    if (x.is_view() && x.op != SimOp::kNone) ++views[static_cast<size_t>(x.view_src)];
    if (x.input) allocate(n, copy_backend_[k]);
    for (Id s : x.src) {
      if (s < 0) continue;
      ++children[static_cast<size_t>(s)];
      if (g_.t(s).input) allocate(s, copy_backend_[k]);
    }
  }
  for (size_t k = 0; k < copy_nodes_.size(); ++k) {
    const Id n = copy_nodes_[k];
    const int b = copy_backend_[k];
    for (Id s : g_.t(n).src) {
      if (s >= 0) allocate(s, b);
    }
    allocate(n, b);
    for (Id s : g_.t(n).src) {
      if (s < 0) continue;
      const auto us = static_cast<size_t>(s);
      if (--children[us] != 0 || views[us] != 0) continue;
      const SimTensor& src = g_.t(s);
      if (src.is_view()) {
        const auto vs = static_cast<size_t>(src.view_src);
        if (src.op != SimOp::kNone) --views[vs];
        if (views[vs] == 0 && children[vs] == 0 && own[vs]) free_node(src.view_src);
      } else if (own[us]) {
        free_node(s);
      }
    }
  }
  return Sizes(allocs);
}

// What the graph needs: each backend's buffer at its high-water mark, and the
// splits with the bytes their inputs copy.
SimBufferSizes Scheduler::Sizes(const std::vector<DynAlloc>& allocs) const {
  SimBufferSizes out;
  for (const auto& a : allocs) out.bytes.push_back(a.max_size());
  out.n_splits = n_splits_;
  out.split_input_bytes = split_input_bytes_;
  return out;
}

SimBufferSizes Scheduler::Run() {
  Assign();
  Split();
  CopyUnreadInputs();
  return Allocate();
}

}  // namespace

SimBufferSizes SimulateComputeBuffers(SimGraph& graph, const std::vector<SimBackend>& backends,
                                      int n_copies) {
  if (backends.empty()) return {};
  Scheduler s(graph, backends, n_copies);
  return s.Run();
}

}  // namespace moetune
