#include "model/graph_alloc_sim.h"

#include <gtest/gtest.h>

namespace moetune {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kF = kMiB / 4;  // f32 elements in one MiB

std::vector<SimBackend> CpuOnly() { return {{"CPU", 0, 32}}; }

// ggml_op_can_inplace ops reuse their parent's memory when nothing else
// reads the parent: a chain of in-place ops costs one buffer, not one each.
TEST(GraphAllocSim, InPlaceOpsReuseTheirParent) {
  SimGraph g;
  const auto in = g.Input(SimType::kF32, {kF, 1, 1, 1}, "in");
  const auto x = g.New(SimOp::kOther, SimType::kF32, {kF, 1, 1, 1}, {in}, "x");
  auto y = g.Inplace({x}, "y1");
  y = g.Inplace({y}, "y2");
  y = g.Inplace({y}, "y3");
  const auto out = g.New(SimOp::kOther, SimType::kF32, {8, 1, 1, 1}, {y, in}, "out");
  g.SetOutput(out);
  g.Expand(out);
  const auto sizes = SimulateComputeBuffers(g, CpuOnly());
  EXPECT_EQ(sizes.bytes[0], 2 * kMiB + 32);  // in + x (y1..y3 in place) + out
  // The same chain with ops that cannot run in place needs one more buffer.
  SimGraph h;
  const auto in2 = h.Input(SimType::kF32, {kF, 1, 1, 1}, "in");
  auto z = h.New(SimOp::kOther, SimType::kF32, {kF, 1, 1, 1}, {in2}, "x");
  for (int i = 0; i < 3; ++i) z = h.Cont(z, "copy");
  const auto out2 = h.New(SimOp::kOther, SimType::kF32, {8, 1, 1, 1}, {z, in2}, "out");
  h.Expand(out2);
  EXPECT_EQ(SimulateComputeBuffers(h, CpuOnly()).bytes[0], 3 * kMiB);
}

// A view keeps its source alive until the view's last reader is done
// (ggml_gallocr: n_views), and a graph output is never freed.
TEST(GraphAllocSim, ViewsKeepTheirSourceAndOutputsStay) {
  SimGraph g;
  const auto in = g.Input(SimType::kF32, {8, 1, 1, 1}, "in");
  const auto big = g.New(SimOp::kOther, SimType::kF32, {kF, 1, 1, 1}, {in}, "big");
  const auto half = g.View(big, {kF / 2, 1, 1, 1}, {4, 4 * kF / 2, 0, 0}, 0, "half");
  const auto a = g.New(SimOp::kOther, SimType::kF32, {kF, 1, 1, 1}, {in}, "a");
  const auto b = g.New(SimOp::kOther, SimType::kF32, {kF, 1, 1, 1}, {half, a}, "b");
  g.SetOutput(b);
  g.Expand(b);
  // in, big (alive through its view), a, b: nothing can be reused.
  EXPECT_EQ(SimulateComputeBuffers(g, CpuOnly()).bytes[0], 3 * kMiB + 32);
}

// Freed memory is reused by the best-fitting hole, not at the end.
TEST(GraphAllocSim, BestFitReusesHoles) {
  SimGraph g;
  const auto in = g.Input(SimType::kF32, {8, 1, 1, 1}, "in");
  const auto a = g.New(SimOp::kOther, SimType::kF32, {4 * kF, 1, 1, 1}, {in}, "a");
  const auto b = g.New(SimOp::kOther, SimType::kF32, {kF, 1, 1, 1}, {a}, "b");  // a freed
  const auto c = g.New(SimOp::kOther, SimType::kF32, {2 * kF, 1, 1, 1}, {b}, "c");
  const auto d = g.New(SimOp::kOther, SimType::kF32, {8, 1, 1, 1}, {c, in}, "d");
  g.Expand(d);
  // in | a(4) ... b after a; a is freed after b: c fits into a's hole.
  EXPECT_EQ(SimulateComputeBuffers(g, CpuOnly()).bytes[0], 5 * kMiB + 32);
}

// A weight in host memory: CUDA computes the op itself for large batches and
// copies the weight into its compute buffer (op offload); the RPC backend
// does not offload, so the op runs on the CPU and its result is copied over.
TEST(GraphAllocSim, HostWeightsAreCopiedOnlyWhereOpsAreOffloaded) {
  auto build = [](SimGraph& g) {
    const auto in = g.Input(SimType::kF32, {1024, 512, 1, 1}, "in");         // 2 MiB, host
    const auto wd = g.Weight({1024, 1024, 1, 1}, 4 * kMiB, 0, "on_device");  // device weight
    const auto wh = g.Weight({1024, 1024, 1, 1}, 4 * kMiB, 1, "on_host");    // host weight
    const auto x = g.MulMat(wd, in, "x");
    const auto y = g.MulMat(wh, x, "y");
    const auto z = g.MulMat(wd, y, "z");
    g.SetOutput(z);
    g.Expand(z);
  };
  SimGraph cuda;
  build(cuda);
  const auto c = SimulateComputeBuffers(cuda, {{"CUDA0", 32, 128}, {"CPU", 0, 32}});
  SimGraph rpc;
  build(rpc);
  const auto r = SimulateComputeBuffers(rpc, {{"RPC0", 0, 32}, {"CPU", 0, 32}});
  // CUDA: the weight's copy (4 MiB) comes in while x (2 MiB) still lives and
  // the input's copy has left a 2 MiB hole below them: 8 MiB; the host holds
  // only the input.
  EXPECT_EQ(c.n_splits, 2);
  EXPECT_EQ(c.bytes[0], 8 * kMiB);
  EXPECT_EQ(c.bytes[1], 2 * kMiB);
  // RPC: y runs on the CPU between two device splits: x is copied to the host
  // and y back; no weight is copied, so the device needs half as much.
  EXPECT_EQ(r.n_splits, 3);
  EXPECT_EQ(r.bytes[0], 4 * kMiB);
  EXPECT_EQ(r.bytes[1], 4 * kMiB);
}

// Pipeline parallelism (n_copies 4): every graph input, read or not, and
// every split input is kept in four copies for the whole graph, allocated
// before anything else; one copy is what a graph without it needs.
TEST(GraphAllocSim, PipelineParallelismKeepsFourCopiesOfEveryInput) {
  auto build = [](SimGraph& g) {
    const auto in = g.Input(SimType::kF32, {1024, 512, 1, 1}, "in");  // 2 MiB, host
    g.Expand(g.Input(SimType::kF32, {1024, 256, 1, 1}, "spare"));     // 1 MiB, read by nobody
    const auto w0 = g.Weight({1024, 1024, 1, 1}, 4 * kMiB, 0, "w0");
    const auto w1 = g.Weight({1024, 1024, 1, 1}, 4 * kMiB, 1, "w1");
    const auto x = g.MulMat(w0, in, "x");  // on RPC0, 2 MiB
    const auto y = g.MulMat(w1, x, "y");   // on RPC1, 2 MiB
    g.SetOutput(y);
    g.Expand(y);
  };
  const std::vector<SimBackend> devices = {{"RPC0", 0, 32}, {"RPC1", 0, 32}, {"CPU", 0, 32}};
  SimGraph one;
  build(one);
  const auto a = SimulateComputeBuffers(one, devices);
  SimGraph four;
  build(four);
  const auto b = SimulateComputeBuffers(four, devices, 4);
  // One copy: each device holds its input's copy and its result; the host
  // its two inputs.
  EXPECT_EQ(a.bytes, (std::vector<int64_t>{4 * kMiB, 4 * kMiB, 3 * kMiB}));
  // Four: four copies of each device's input beside its result, and four
  // copies of both host inputs.
  EXPECT_EQ(b.bytes, (std::vector<int64_t>{10 * kMiB, 10 * kMiB, 12 * kMiB}));
  EXPECT_EQ(a.n_splits, b.n_splits);
}

}  // namespace
}  // namespace moetune
