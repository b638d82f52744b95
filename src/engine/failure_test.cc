#include "engine/failure.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace moetune {
namespace {

ExitStatus Exited(int code) {
  ExitStatus s;
  s.exited = true;
  s.exit_code = code;
  return s;
}

ExitStatus Signaled(int sig) {
  ExitStatus s;
  s.signal = sig;
  return s;
}

// Classifies like the engine runner does: diagnostics are picked from the lines.
EngineFailure Classify(const ExitStatus& st, const std::vector<std::string>& lines,
                       bool timed_out = false) {
  std::vector<std::string> diag;
  std::deque<std::string> tail;
  for (const auto& l : lines) {
    if (IsDiagnosticLine(l)) diag.push_back(l);
    tail.push_back(l);
  }
  return ClassifyFailure(st, timed_out, 1.0, diag, tail);
}

// Messages below are copied from the installed engine (llama.cpp 0.7.0, Debian).
TEST(FailureTest, MissingModelIsModelLoad) {
  const auto f = Classify(
      Exited(1),
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): long engine lines wrapped on purpose
      {"ggml_backend_load_best: failed to enumerate /usr/lib/x86_64-linux-gnu/ggml/backends0: No "
       "such file or directory",
       "gguf_init_from_file: failed to open GGUF file '/nonexist.gguf' (No such file or directory)",
       "llama_model_load: error loading model: llama_model_loader: failed to load model from "
       "/nonexist.gguf",
       "llama_model_load_from_file_impl: failed to load model",
       "llama_bench: error: failed to load model '/nonexist.gguf'"});
  EXPECT_EQ(f.kind, FailureKind::kModelLoad);
  EXPECT_NE(f.message.find("failed to open GGUF file '/nonexist.gguf'"), std::string::npos);
  EXPECT_EQ(f.message.find("ggml_backend_load_best"), std::string::npos);
  EXPECT_EQ(f.exit, "exit code 1");
}

TEST(FailureTest, CorruptModelIsModelLoad) {
  const auto f = Classify(
      Exited(1), {"gguf_init_from_reader: invalid magic characters: '\x01\x02', expected 'GGUF'",
                  "llama_bench: error: failed to load model '/tmp/corrupt.gguf'"});
  EXPECT_EQ(f.kind, FailureKind::kModelLoad);
  EXPECT_NE(f.message.find("invalid magic characters"), std::string::npos);
}

TEST(FailureTest, InvalidFlagValueIsInvalidConfig) {
  const auto f = Classify(
      Exited(1), {"error: invalid range format", "error: invalid parameter for argument: -t",
                  "usage: llama-bench [options]"});
  EXPECT_EQ(f.kind, FailureKind::kInvalidConfig);
  EXPECT_NE(f.message.find("invalid parameter for argument: -t"), std::string::npos);
}

TEST(FailureTest, DeviceOutOfMemory) {
  const auto f = Classify(
      Exited(1), {"ggml_backend_cuda_buffer_type_alloc_buffer: allocating 20480.00 MiB on device "
                  "0: cudaMalloc failed: out of memory",
                  "alloc_tensor_range: failed to allocate CUDA0 buffer of size 21474836480",
                  "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
                  "llama_bench: error: failed to load model 'm.gguf'"});
  EXPECT_EQ(f.kind, FailureKind::kOutOfMemoryDevice);
  EXPECT_NE(f.message.find("cudaMalloc failed: out of memory"), std::string::npos);
}

TEST(FailureTest, VulkanOutOfMemory) {
  const auto f =
      Classify(Signaled(SIGABRT),
               {"terminate called after throwing an instance of 'vk::OutOfDeviceMemoryError'",
                "  what():  vk::Device::allocateMemory: ErrorOutOfDeviceMemory"});
  EXPECT_EQ(f.kind, FailureKind::kOutOfMemoryDevice);
  EXPECT_NE(f.message.find("SIGABRT"), std::string::npos);
}

TEST(FailureTest, HostOutOfMemory) {
  const auto f = Classify(
      Exited(1), {"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 99",
                  "alloc_tensor_range: failed to allocate CPU buffer of size 99",
                  "llama_bench: error: failed to load model 'm.gguf'"});
  EXPECT_EQ(f.kind, FailureKind::kOutOfMemoryHost);
  const auto g = Classify(Signaled(SIGABRT),
                          {"terminate called after throwing an instance of 'std::bad_alloc'",
                           "  what():  std::bad_alloc"});
  EXPECT_EQ(g.kind, FailureKind::kOutOfMemoryHost);
}

TEST(FailureTest, SignalIsCrash) {
  const auto f = Classify(Signaled(SIGSEGV), {"llama-bench: benchmark 1/2: starting"});
  EXPECT_EQ(f.kind, FailureKind::kCrash);
  EXPECT_NE(f.message.find("SIGSEGV"), std::string::npos);
  const auto a = Classify(
      Signaled(SIGABRT), {"/build/ggml/src/ggml.c:1234: GGML_ASSERT(a->ne[2] == b->ne[0]) failed"});
  EXPECT_EQ(a.kind, FailureKind::kCrash);
  EXPECT_NE(a.message.find("GGML_ASSERT"), std::string::npos);
  const auto k = Classify(Signaled(SIGKILL), {});
  EXPECT_NE(k.message.find("out-of-memory killer"), std::string::npos);
}

// The Debian engine attaches gdb when it aborts: its lines must not become the
// message; the engine's own reason must (issue 7).
TEST(FailureTest, EngineLastWordsNotTheDebuggers) {
  const auto f = Classify(
      Signaled(SIGABRT),
      {"llama_init_from_model: model does not support different K (q8_0) and V (f16) cache types",
       "[New LWP 9106]",
       // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): a long line wrapped on purpose
       "warning: File \"/x/libthread_db.so.1\" auto-loading has been declined by your "
       "`auto-load safe-path' set to \"$debugdir:$datadir/auto-load\".",
       "warning: Unable to find libthread_db matching inferior's thread library, thread "
       "debugging will not be available.",
       "0x00007f3d153c0efe in ?? () from /x/libc.so.6",
       "#0  0x00007f3d153c0efe in ?? () from /x/libc.so.6", "[Inferior 1 (process 9098) detached]",
       "terminate called after throwing an instance of 'std::runtime_error'",
       "  what():  failed to create llama_context from model"});
  EXPECT_EQ(f.kind, FailureKind::kCrash);
  EXPECT_EQ(f.message.find("gdb"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("libthread_db"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("#0"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("does not support different K (q8_0) and V (f16)"), std::string::npos)
      << f.message;
  for (const auto& l : f.stderr_tail) EXPECT_EQ(l.find("Inferior"), std::string::npos) << l;
  // llama-bench's exit 1 with a warning before the reason.
  const auto b = Classify(
      Exited(1),
      {"done_getting_tensors: tensor 'token_embd.weight' (q8_0) (and 69 others) cannot be used "
       "with preferred buffer type CPU_REPACK, using CPU instead",
       "llama_init_from_model: quantized V cache requires flash_attn to be enabled",
       "llama_bench: error: failed to create context with model 'm.gguf'"});
  EXPECT_EQ(b.message.find("CPU_REPACK"), std::string::npos) << b.message;
  EXPECT_LT(b.message.find("quantized V cache requires flash_attn"),
            b.message.find("failed to create context"))
      << b.message;
}

TEST(FailureTest, TimeoutWins) {
  const auto f =
      Classify(Signaled(SIGTERM), {"llama-bench: benchmark 1/1: generation run 1/5"}, true);
  EXPECT_EQ(f.kind, FailureKind::kTimeout);
  EXPECT_NE(f.message.find("1 s"), std::string::npos);
}

TEST(FailureTest, CleanExitWithoutResultIsUnparseable) {
  EXPECT_EQ(Classify(Exited(0), {}).kind, FailureKind::kUnparseable);
  const auto e = Classify(Exited(3), {"something odd"});
  EXPECT_EQ(e.kind, FailureKind::kEngineError);
  EXPECT_EQ(e.message, "something odd");
}

// Recorded with llama.cpp 0.7.0 (Debian build 11669): llama-bench --rpc to a
// port nothing listens on, to a listener that answers an HTTP page, and to a
// ggml-rpc-server killed during the run (SIGKILL) -- each ends in SIGABRT.
TEST(FailureTest, RpcConnectionFailureNamesTheHost) {
  const auto f =
      Classify(Signaled(SIGABRT), {"load_backend: loaded RPC backend from /x/libggml-rpc.so",
                                   "./src/ggml-rpc/ggml-rpc.cpp:650: Failed to connect to "
                                   "127.0.0.1:50099",
                                   "#0  0x00007f3991c9ba02 in ?? () from /x/libc.so.6"});
  EXPECT_EQ(f.kind, FailureKind::kRpcHost);
  EXPECT_EQ(f.rpc_host, "127.0.0.1:50099");
  EXPECT_NE(f.message.find("Failed to connect"), std::string::npos) << f.message;
}

TEST(FailureTest, RpcServerDeadOrGarbledIsRpcHostWithoutAName) {
  for (const std::vector<std::string>& lines :
       {std::vector<std::string>{"recv failed (bytes_recv=0, size_to_recv=8)",
                                 "./src/ggml-rpc/ggml-rpc.cpp:682: Remote RPC server crashed or "
                                 "returned malformed response"},
        std::vector<std::string>{"./src/ggml-rpc/ggml-rpc.cpp:430: Remote RPC server crashed or "
                                 "returned malformed response"}}) {
    const auto f = Classify(Signaled(SIGABRT), lines);
    EXPECT_EQ(f.kind, FailureKind::kRpcHost);
    EXPECT_TRUE(f.rpc_host.empty());
    EXPECT_NE(f.message.find("Remote RPC server crashed"), std::string::npos) << f.message;
  }
  // An allocation failure on the RPC device is memory, not a host failure.
  const auto oom = Classify(Exited(1), {"ggml_backend_cpu_buffer_type_alloc_buffer: failed to "
                                        "allocate buffer of size 99999"});
  EXPECT_NE(oom.kind, FailureKind::kRpcHost);
}

// Recorded with llama.cpp 0.7.0 (Debian build 11669): llama-bench -ngl 99 over
// a ggml-rpc-server started under `ulimit -v` (64 MiB for the weights, 200
// MiB for the KV cache of -d 65536, 560 MiB for the compute buffer). The
// server stays up and refuses the buffer, as a strict GPU does: memory, with
// the server named, not a failed host.
TEST(FailureTest, AnRpcDeviceOutOfMemoryNamesItsServer) {
  const std::vector<std::vector<std::string>> runs = {
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): long engine lines wrapped on purpose
      {"[ggml_backend_rpc_buffer_type_alloc_buffer] endpoint: 127.0.0.1:50321, device: 0, "
       "size: 134.86 MiB -> failed",
       "ggml_backend_buft_alloc_buffer_n_default: failed to allocate RPC0[127.0.0.1:50321] "
       "buffer of size 141410304",
       "llama_model_load: error loading model: unable to allocate RPC0[127.0.0.1:50321] buffer",
       "llama_model_load_from_file_impl: failed to load model",
       "llama_bench: error: failed to load model 's4.gguf'"},
      {"ggml_backend_buft_alloc_buffer_n_default: failed to allocate RPC0[127.0.0.1:50321] "
       "buffer of size 538968064",
       "llama_init_from_model: failed to initialize the context: failed to allocate buffer for "
       "kv cache",
       "llama_bench: error: failed to create context with model 's4.gguf'"},
      {"ggml_gallocr_reserve_n_impl: failed to allocate RPC0[127.0.0.1:50321] buffer of size "
       "34095104",
       "graph_reserve: failed to allocate compute buffers",
       "llama_init_from_model: failed to initialize the context: failed to allocate compute pp "
       "buffers",
       "llama_bench: error: failed to create context with model 's4.gguf'"}};
  for (const auto& lines : runs) {
    const auto f = Classify(Exited(1), lines);
    EXPECT_EQ(f.kind, FailureKind::kOutOfMemoryDevice) << lines[0];
    EXPECT_EQ(f.rpc_host, "127.0.0.1:50321") << lines[0];
    EXPECT_NE(f.message.find("ggml-rpc-server 127.0.0.1:50321 ran out of memory"),
              std::string::npos)
        << f.message;
    EXPECT_NE(f.message.find("failed to allocate RPC0[127.0.0.1:50321]"), std::string::npos)
        << f.message;
    EXPECT_NE(f.message.find("-ts"), std::string::npos) << "the fix: " << f.message;
  }
  // The second server of a split: its buffer carries its own endpoint.
  const auto second = Classify(
      Exited(1), {"ggml_backend_buft_alloc_buffer_n_default: failed to allocate "
                  "RPC0[10.0.0.3:50052] buffer of size 99",
                  "llama_model_load: error loading model: unable to allocate RPC0[10.0.0.3:50052] "
                  "buffer"});
  EXPECT_EQ(second.rpc_host, "10.0.0.3:50052");
  // A GPU's out-of-memory names no RPC server.
  const auto cuda = Classify(
      Exited(1), {"alloc_tensor_range: failed to allocate CUDA0 buffer of size 21474836480"});
  EXPECT_EQ(cuda.kind, FailureKind::kOutOfMemoryDevice);
  EXPECT_TRUE(cuda.rpc_host.empty());
}

TEST(FailureTest, KindNamesAreStable) {
  EXPECT_STREQ(FailureKindName(FailureKind::kRpcHost), "rpc_host");
  EXPECT_STREQ(FailureKindName(FailureKind::kOutOfMemoryDevice), "oom_device");
  EXPECT_STREQ(FailureKindName(FailureKind::kInvalidConfig), "invalid_config");
  EXPECT_STREQ(FailureKindName(FailureKind::kEngineMissing), "engine_missing");
}

}  // namespace
}  // namespace moetune
