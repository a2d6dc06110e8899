#pragma once
// The parts of `kiln bench`:
//   bench.cpp            options, the table, bench_main
//   bench_workloads.cpp  the kiln workloads: each checked against a host reference, then timed
//   bench_sizes.cpp      the workloads over Variable sizes
//   bench_train.cpp      a captured training step (autograd, AdamW) beside one written by hand
//   bench_threads.cpp    realizes from several threads at once
//   bench_indexing.cpp   an embedding lookup and its gradient (computed addresses)
//   bench_conv.cpp       a 3x3 convolution beside the BLAS on its im2col product
//   bench_sort.cpp       sorting one line of float32 values
//   bench_attention.cpp  causal attention at a GPT-2-small shape
//   bench_decode.cpp     a decode step of examples/gpt2's decoder, captured over a Variable
//   bench_check.h        checking a result, recording a measurement
//   bench_host.cpp       the machine's own limits (memcpy bandwidth, a BLAS loaded at run time)
//                        and an optional peer framework (tinygrad)
// Workloads produce numbers (Result); only bench.cpp formats them.

#include <kiln/tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/registry.h"

namespace kiln::tools::bench {

// ---- timing -------------------------------------------------------------------------------

struct Timing {
  double median_seconds = 0;
  int runs = 0;  // 0: never timed
  // On a GPU: the median time its kernels ran on the device per run (the device's own timer
  // around each kernel, summed), which the figure is computed from; 0 elsewhere. The host's
  // share (building, launching, waiting) is what the overhead workload measures.
  double device_seconds = 0;
  // The time a figure is computed from: on the device where it was measured, else the host's.
  double figure_seconds() const { return device_seconds > 0 ? device_seconds : median_seconds; }
};

// The median of up to `repeat` timed calls of `run` (warm-ups are the caller's), stopping early
// once `budget_seconds` have passed and `minimum` calls were timed, so that one slow workload
// cannot hold the whole benchmark hostage.
Timing time_median(const std::function<void()>& run, int repeat, double budget_seconds = 10,
                   int minimum = 3);

// ---- the machine's limits (bench_host.cpp) ------------------------------------------------

// Bytes read plus bytes written per second by memcpy of a `bytes`-sized buffer, best of several
// tries on one thread and on every core.
double host_copy_bandwidth(size_t bytes);

// Row-major single-precision C = A (m x k) * B (k x n) through a CBLAS found with dlopen: kiln
// never links a BLAS, so the benchmark runs (without this figure) where there is none.
class Blas {
 public:
  // The first of libopenblas.so.0, libblas.so.3 (and a few others) that exports cblas_sgemm;
  // nullptr when there is none. The library stays loaded for the life of the process.
  static std::unique_ptr<Blas> load();

  using SgemmFunction = void (*)(int order, int trans_a, int trans_b, int m, int n, int k,
                                 float alpha, const float* a, int lda, const float* b, int ldb,
                                 float beta, float* c, int ldc);
  Blas(SgemmFunction sgemm, std::string library) : sgemm_(sgemm), library_(std::move(library)) {}

  const std::string& library() const { return library_; }
  void sgemm(int m, int n, int k, const float* a, const float* b, float* c) const;

 private:
  SgemmFunction sgemm_ = nullptr;
  std::string library_;
};

// Figures from a peer framework on the same machine, same workloads and sizes.
struct PeerResult {
  std::string name;                                     // "tinygrad 0.10.0 on CPU"
  std::vector<std::pair<std::string, double>> seconds;  // workload -> median seconds
  std::string problem;  // why there are no figures, when there are none
};

struct PeerSizes {
  int64_t elementwise = 0;  // elements of add and sum
  int64_t matmul = 0;       // side of the square matmul
  int repeat = 0;
};

// Times add, sum, matmul and the `train` row's step (TinyJit) with tinygrad's CPU backend in a
// python3 child process.
PeerResult run_tinygrad_peer(const PeerSizes& sizes);

// ---- the workloads (bench_workloads.cpp) --------------------------------------------------

struct Sizes {
  int64_t elementwise = int64_t{1} << 24;  // copy, add, sum
  int64_t square = 4096;                   // fused and softmax: square x square
  int64_t matmul = 1024;                   // matmul x matmul times matmul x matmul
  double budget_seconds = 10;              // timed seconds per workload before it stops early
  int64_t embedding_rows = 50257;          // embedding: the table's rows (of 768 float32)
  int64_t tokens = 2048;                   // embedding: the rows looked up
  int64_t conv_batch = 8;                  // conv2d: images of 64 x 56 x 56
  int64_t sort = int64_t{1} << 20;         // sort: float32 values in one line
  int64_t attention = 1024;                // attention: the sequence (batch 4, 8 heads of 64)
};
Sizes default_sizes();
Sizes quick_sizes();

// What one workload measured.
struct Result {
  enum class Unit { BytesPerSecond, FlopsPerSecond, Seconds };

  explicit Result(std::string name, std::string problem_size = "")
      : workload(std::move(name)), size(std::move(problem_size)) {}

  std::string workload, size;
  Timing timing;
  std::optional<int64_t> kernels;  // per realize
  Unit unit = Unit::BytesPerSecond;
  double figure = 0;       // in `unit`; 0 when not timed
  double limit = 0;        // the machine's limit in `unit`; 0 when there is none
  std::string limit_name;  // "memcpy", "BLAS", "target", or why there is no limit
  std::string problem;     // "" when the workload ran and its result was right
  bool raised = false;     // the problem is a kiln::Error that stopped the workload
  std::string note;        // said beside "ok"
};

// A device and the sizes to run at; measures workloads on it.
class Harness {
 public:
  Harness(std::string device, Sizes sizes, int repeat);

  const Sizes& sizes() const { return sizes_; }
  const std::string& device() const { return device_; }
  DeviceContext& context() { return *context_; }
  int repeat() const { return repeat_; }

  // Uniform [0, 1) values, already computed, so that timing sees only the workload.
  Tensor realized_rand(Shape shape, uint64_t seed);

  struct Measured {
    Timing timing;
    int64_t kernels = 0;  // launched by one realize
    std::string problem;  // what is wrong, or ""
  };
  // Realizes `build()` once (compiling its kernels) and checks it with `check` ("" when right);
  // then, when right, times `repeat` runs of build + realize + synchronize.
  Measured measure(const std::function<Tensor()>& build,
                   const std::function<std::string(const Tensor&)>& check, int repeat,
                   std::optional<int64_t> expected_kernels);
  // Whether figures come from the device's timer (Timing::device_seconds): on GPUs.
  bool gpu() const { return gpu_; }

 private:
  void synchronize();
  int64_t kernels_launched();  // KernelStats::launches of the device
  double device_median(const std::function<Tensor()>& build, int runs);

  std::string device_;
  Sizes sizes_;
  int repeat_;
  std::shared_ptr<DeviceContext> context_;
  bool gpu_ = false;
};

// The copy bandwidth that bandwidth-bound workloads are set beside.
struct CopyLimit {
  double bytes_per_second = 0;
  std::string name;  // "memcpy" (the host's), "device copy" (the driver's, on a GPU)
};

// Each builds its inputs, checks and times one workload. The bandwidth ones are set beside
// `copy`; matmul beside `blas` when there is one. Throw kiln::Error.
Result bench_copy(Harness& harness, const CopyLimit& copy);
Result bench_add(Harness& harness, const CopyLimit& copy);
Result bench_sum(Harness& harness, const CopyLimit& copy);
Result bench_fused(Harness& harness, const CopyLimit& copy);
Result bench_softmax(Harness& harness, const CopyLimit& copy);
// softmax over the first n rows of a 4096x1024 buffer, n a variable bound to 64 sizes in 1..4096:
// one pass over every size, and the kernels the sizes after the first built (must be 0).
Result bench_softmax_sizes(Harness& harness, const CopyLimit& copy);
// [2,n,128] @ [128,384] with n a variable bound to 64, beside the same product compiled for a
// fixed 64 (its limit): a Variable's kernel must be optimised as the fixed one is.
Result bench_matmul_sizes(Harness& harness);
// SGD steps of a 784-64-10 MLP whose batch slides (a Variable offset) and whose learning rate
// changes (Tensor::scalar): the kernels built after the first step (must be 0), and the time of a
// step beside the same step at a fixed offset and rate (its limit).
Result bench_train_sizes(Harness& harness);
// One captured AdamW step of a 784-64-10 MLP at batch 64 written with kiln's modules, autograd
// and optimizer (bench_train.cpp), beside the same step written by hand with tensor operations
// and captured the same way (its limit); the losses of the two must agree step by step.
Result bench_train(Harness& harness);
// A decode step of the GPT-2-style block of examples/gpt2 captured over a Variable length n and
// replayed at n = 64..79, each checked against the forward pass compiled for that length: the
// kernels built after the first step (must be 0), kernels per step, and the replay's time at n = 72
// beside 1.5x the fixed-length forward's (its limit).
Result bench_decode(Harness& harness);
// The matmul's limit is the device's vendor SGEMM where it measured one (`limits`), else the
// host's BLAS for a CPU device.
Result bench_matmul(Harness& harness, const Blas* blas, const DeviceLimits& limits);
// A 3x3 convolution, 64 -> 64 channels of 56 x 56, padding 1, float32, beside the device's SGEMM
// (a GPU's) or the host's BLAS on the same im2col product (a CPU's).
Result bench_conv2d(Harness& harness, const Blas* blas, const DeviceLimits& limits);
// `sort` float32 values sorted (kiln::sort), beside the copy bandwidth for reading and writing
// them once.
Result bench_sort(Harness& harness, const CopyLimit& copy);
// Causal scaled_dot_product_attention, batch 4, 8 heads of 64, over `attention` positions: q, k, v
// and the output moved once per run, beside the copy bandwidth (bench_attention.cpp).
Result bench_attention(Harness& harness, const CopyLimit& copy);
// bfloat16 inputs and output (float32 accumulation) beside the vendor's bfloat16 GEMM.
Result bench_matmul_bfloat16(Harness& harness, const DeviceLimits& limits);
Result bench_overhead(Harness& harness, double target_seconds);
// 4 threads each realizing a small graph (16 elements) over its own input, again and again: the
// time per realize over all threads, beside one thread's divided by 1.5 (its limit, the speed-up
// asked of 4 threads on 2 cores).
Result bench_threads(Harness& harness);
// `tokens` rows looked up in an `embedding_rows` x 768 float32 table (a language model's token
// embedding, indices checked), beside the copy bandwidth for the bytes it must move: the rows
// read and the output written.
Result bench_embedding(Harness& harness, const CopyLimit& copy);
// The gradient of that lookup: `tokens` rows of 768 added into a zero `embedding_rows` x 768
// table where their indices point (repeats add up, in order), beside the copy bandwidth for the
// table written and the rows read.
Result bench_embedding_grad(Harness& harness, const CopyLimit& copy);
// A captured step of `kKernels` small kernels replayed (include/kiln/capture.h): the time of one
// replay, beside the target for the whole step and the warm realize of the same step.
Result bench_replay(Harness& harness, double target_seconds);

}  // namespace kiln::tools::bench
