// The workloads of `kiln bench`. Each builds its inputs with the public Tensor API, checks kiln's
// result against a reference computed here in double precision, and only then times it: a fast
// wrong answer is not a figure.

#include <kiln/capture.h>
#include <kiln/error.h>
#include <kiln/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>

#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {
namespace {

std::string count_text(int64_t count) {
  if (count >= (int64_t{1} << 20) && count % (int64_t{1} << 20) == 0)
    return std::to_string(count >> 20) + "M";
  if (count >= 1024 && count % 1024 == 0) return std::to_string(count >> 10) + "K";
  return std::to_string(count);
}

std::string square_text(int64_t side) {
  return std::to_string(side) + "x" + std::to_string(side);
}

// C = A B in double on the host, row by row so that the inner loop streams.
// In double, rows split over the host's cores (a GPU's 4096^3 is 69 G multiply-adds).
std::vector<double> host_matmul(const std::vector<float>& a, const std::vector<float>& b,
                                int64_t n) {
  std::vector<double> c(static_cast<size_t>(n * n), 0.0);
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      double* row = c.data() + i * n;
      for (int64_t k = 0; k < n; ++k) {
        const double scale = a[i * n + k];
        const float* b_row = b.data() + k * n;
        for (int64_t j = 0; j < n; ++j) row[j] += scale * b_row[j];
      }
    }
  };
  const int64_t threads =
      std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, std::max<int64_t>(n / 16, 1));
  std::vector<std::thread> workers;
  for (int64_t index = 0; index < threads; ++index)
    workers.emplace_back(rows, n * index / threads, n * (index + 1) / threads);
  for (std::thread& worker : workers) worker.join();
  return c;
}

// float -> bfloat16 -> float, rounding to nearest even (as kiln's casts do).
float round_to_bfloat16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  bits = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000u;
  std::memcpy(&value, &bits, sizeof bits);
  return value;
}

}  // namespace

Sizes default_sizes() {
  return Sizes{};
}

Sizes quick_sizes() {
  Sizes sizes;
  sizes.elementwise = int64_t{1} << 20;
  sizes.square = 1024;
  sizes.matmul = 512;
  sizes.budget_seconds = 3;
  sizes.embedding_rows = 4096;
  sizes.tokens = 256;
  sizes.conv_batch = 1;
  sizes.sort = int64_t{1} << 16;
  sizes.attention = 256;
  return sizes;
}

// ---- the harness --------------------------------------------------------------------------

Harness::Harness(std::string device, Sizes sizes, int repeat)
    : device_(std::move(device)),
      sizes_(sizes),
      repeat_(repeat),
      context_(open_device(device_)),
      gpu_(context_->device().properties().kind == DeviceKind::GPU) {}

Tensor Harness::realized_rand(Shape shape, uint64_t seed) {
  Tensor tensor = Tensor::rand(std::move(shape), seed, device_);
  tensor.realize();
  return tensor;
}

// The CPU device runs synchronously; another device may still be working when realize returns.
void Harness::synchronize() {
  context_->device().synchronize();
}

int64_t Harness::kernels_launched() {
  return context_->stats().launches;
}

Harness::Measured Harness::measure(const std::function<Tensor()>& build,
                                   const std::function<std::string(const Tensor&)>& check,
                                   int repeat, std::optional<int64_t> expected_kernels) {
  Measured measured;
  const int64_t before_first = kernels_launched();
  {
    Tensor result = build();
    result.realize();
    synchronize();
    measured.kernels = kernels_launched() - before_first;
    measured.problem = check(result);
  }
  if (!measured.problem.empty()) return measured;
  if (expected_kernels && measured.kernels != *expected_kernels) {
    measured.problem = "ran " + std::to_string(measured.kernels) + " kernels, expected " +
                       std::to_string(*expected_kernels);
  }
  const int64_t before_timed = kernels_launched();
  measured.timing = time_median(
      [&] {
        // The result dies inside the timed region: its buffer goes back to the caching
        // allocator, which is what a loop in a real program pays too.
        Tensor result = build();
        result.realize();
        synchronize();
      },
      repeat, sizes_.budget_seconds);
  // A realize that launched nothing would have timed a cache lookup, not the workload.
  const int64_t launched = kernels_launched() - before_timed;
  if (measured.problem.empty() && launched != measured.kernels * measured.timing.runs) {
    measured.problem = "the timed runs launched " + std::to_string(launched) +
                       " kernels, expected " +
                       std::to_string(measured.kernels * measured.timing.runs);
  }
  if (measured.problem.empty() && measured.timing.runs > 0 && gpu_)
    measured.timing.device_seconds = device_median(build, measured.timing.runs);
  return measured;
}

// The median over `runs` realizes of `build()` of the time its kernels ran on the device: each
// kernel waited for and timed by the device, so that the launch and wait latency, which the
// overhead workload measures, stay out of bandwidth and FLOP figures (as they stay out of the
// device copy and GEMM limits, timed the same way).
double Harness::device_median(const std::function<Tensor()>& build, int runs) {
  KernelStats& stats = context_->stats();
  std::vector<double> samples;
  stats.time_kernels = true;
  try {
    for (int run = 0; run < runs; ++run) {
      const int64_t before = stats.kernel_nanoseconds;
      Tensor result = build();
      result.realize();
      synchronize();
      samples.push_back(static_cast<double>(stats.kernel_nanoseconds - before) * 1e-9);
    }
  } catch (...) {
    stats.time_kernels = false;
    throw;
  }
  stats.time_kernels = false;
  std::sort(samples.begin(), samples.end());
  return samples.empty() ? 0 : samples[samples.size() / 2];
}

// ---- the workloads ------------------------------------------------------------------------

// x.contiguous(): kiln's own copy kernel, the device's counterpart of memcpy.
Result bench_copy(Harness& harness, const CopyLimit& copy) {
  const int64_t n = harness.sizes().elementwise;
  Result result("copy", count_text(n) + " f32");
  Tensor x = harness.realized_rand({n}, 1);
  const std::vector<float> host = x.to_vector<float>();
  auto measured =
      harness.measure([&] { return x.contiguous(); },
                      [&](const Tensor& out) {
                        return compare(
                            out.to_vector<float>(), [&](size_t i) { return host[i]; }, 0, 0);
                      },
                      harness.repeat(), 1);
  record_bandwidth(result, measured, 2.0 * 4 * n, copy);
  return result;
}

Result bench_add(Harness& harness, const CopyLimit& copy) {
  const int64_t n = harness.sizes().elementwise;
  Result result("add", count_text(n) + " f32");
  Tensor a = harness.realized_rand({n}, 2), b = harness.realized_rand({n}, 3);
  const std::vector<float> host_a = a.to_vector<float>(), host_b = b.to_vector<float>();
  auto measured =
      harness.measure([&] { return a + b; },
                      [&](const Tensor& out) {
                        // float addition is correctly rounded: the double sum rounds to the same
                        // float.
                        return compare(
                            out.to_vector<float>(),
                            [&](size_t i) { return double(host_a[i]) + host_b[i]; }, 1e-7, 0);
                      },
                      harness.repeat(), 1);
  record_bandwidth(result, measured, 3.0 * 4 * n, copy);
  return result;
}

Result bench_sum(Harness& harness, const CopyLimit& copy) {
  const int64_t n = harness.sizes().elementwise;
  Result result("sum", count_text(n) + " f32");
  Tensor a = harness.realized_rand({n}, 4);
  double reference = 0;
  for (float value : a.to_vector<float>()) reference += value;
  auto measured =
      harness.measure([&] { return a.sum(); },
                      // A float sum of millions of values stays within 1e-3 only when it is
                      // accumulated in pieces; one running float total drifts far more.
                      [&](const Tensor& out) {
                        return compare(
                            out.to_vector<float>(), [&](size_t) { return reference; }, 1e-3, 0);
                      },
                      harness.repeat(), std::nullopt);
  record_bandwidth(result, measured, 4.0 * n, copy);
  return result;
}

// ((a*b + c).relu().exp()).sum(1): an elementwise chain into a reduce, which must fuse into one
// kernel that reads each input once and writes only the row sums.
Result bench_fused(Harness& harness, const CopyLimit& copy) {
  const int64_t side = harness.sizes().square;
  Result result("fused", square_text(side) + " f32");
  Tensor a = harness.realized_rand({side, side}, 5), b = harness.realized_rand({side, side}, 6),
         c = harness.realized_rand({side, side}, 7);
  std::vector<double> reference(static_cast<size_t>(side));
  {
    const std::vector<float> host_a = a.to_vector<float>(), host_b = b.to_vector<float>(),
                             host_c = c.to_vector<float>();
    for (int64_t i = 0; i < side; ++i) {
      double total = 0;
      for (int64_t j = i * side; j < (i + 1) * side; ++j) {
        total += std::exp(std::max(0.0, double(host_a[j]) * host_b[j] + host_c[j]));
      }
      reference[i] = total;
    }
  }
  auto measured = harness.measure([&] { return (a * b + c).relu().exp().sum({1}); },
                                  [&](const Tensor& out) {
                                    return compare(
                                        out.to_vector<float>(),
                                        [&](size_t i) { return reference[i]; }, 1e-4, 0);
                                  },
                                  harness.repeat(), 1);
  record_bandwidth(result, measured, 3.0 * 4 * side * side + 4.0 * side, copy);
  return result;
}

Result bench_softmax(Harness& harness, const CopyLimit& copy) {
  const int64_t side = harness.sizes().square;
  Result result("softmax", square_text(side) + " f32");
  Tensor x = harness.realized_rand({side, side}, 8);
  const std::vector<float> host = x.to_vector<float>();
  auto measured = harness.measure([&] { return x.softmax(-1); },
                                  [&](const Tensor& out) {
                                    std::vector<double> expected(host.size());
                                    for (int64_t i = 0; i < side; ++i) {
                                      const float* in = host.data() + i * side;
                                      double* row = expected.data() + i * side;
                                      const double largest = *std::max_element(in, in + side);
                                      double total = 0;
                                      for (int64_t j = 0; j < side; ++j)
                                        total += row[j] = std::exp(in[j] - largest);
                                      for (int64_t j = 0; j < side; ++j) row[j] /= total;
                                    }
                                    return compare(
                                        out.to_vector<float>(),
                                        [&](size_t i) { return expected[i]; }, 1e-4, 1e-10);
                                  },
                                  harness.repeat(), std::nullopt);
  // The least any softmax must move: read x once, write the result once.
  record_bandwidth(result, measured, 2.0 * 4 * side * side, copy);
  return result;
}

Result bench_matmul(Harness& harness, const Blas* blas, const DeviceLimits& limits) {
  const int64_t n = harness.sizes().matmul;
  Result result("matmul", std::to_string(n) + "^3 f32");
  result.unit = Result::Unit::FlopsPerSecond;
  Tensor a = harness.realized_rand({n, n}, 9), b = harness.realized_rand({n, n}, 10);
  const std::vector<float> host_a = a.to_vector<float>(), host_b = b.to_vector<float>();
  const std::vector<double> reference = host_matmul(host_a, host_b, n);
  const double flops = 2.0 * n * n * n;

  // The BLAS first: its figure is this row's limit whatever kiln does.
  std::string blas_problem;
  const bool gpu = harness.context().device().properties().kind == DeviceKind::GPU;
  if (limits.gemm_float32_flops > 0) {
    result.limit = limits.gemm_float32_flops;
    result.limit_name = limits.gemm_library + " SGEMM";
  } else if (gpu) {
    result.limit_name = "no GPU BLAS";  // a host BLAS is no limit for a GPU
  } else if (blas) {
    std::vector<float> c(static_cast<size_t>(n * n));
    const int side = static_cast<int>(n);
    auto run_blas = [&] { blas->sgemm(side, side, side, host_a.data(), host_b.data(), c.data()); };
    run_blas();  // warm-up: starts its threads and touches every page
    blas_problem = compare(
        c, [&](size_t i) { return reference[i]; }, 1e-4, 0);
    result.limit =
        flops /
        time_median(run_blas, harness.repeat(), harness.sizes().budget_seconds).median_seconds;
    result.limit_name = "BLAS";
  } else {
    result.limit_name = "no BLAS found";
  }

  auto measured = harness.measure([&] { return a.matmul(b); },
                                  [&](const Tensor& out) {
                                    return compare(
                                        out.to_vector<float>(),
                                        [&](size_t i) { return reference[i]; }, 1e-4, 0);
                                  },
                                  harness.repeat(), std::nullopt);
  record(result, measured);
  if (measured.timing.runs > 0) result.figure = flops / measured.timing.figure_seconds();
  if (!blas_problem.empty()) result.note = "the BLAS result is off: " + blas_problem;
  return result;
}

Result bench_matmul_bfloat16(Harness& harness, const DeviceLimits& limits) {
  const int64_t n = harness.sizes().matmul;
  Result result("matmul", std::to_string(n) + "^3 bf16");
  result.unit = Result::Unit::FlopsPerSecond;
  result.limit = limits.gemm_bfloat16_flops;
  result.limit_name = limits.gemm_library + " bf16 GEMM";
  Tensor a = harness.realized_rand({n, n}, 11).cast(dtypes::bfloat16);
  Tensor b = harness.realized_rand({n, n}, 12).cast(dtypes::bfloat16);
  a.realize();
  b.realize();
  const std::vector<float> host_a = a.to_vector<float>(), host_b = b.to_vector<float>();
  const std::vector<double> reference = host_matmul(host_a, host_b, n);
  auto measured = harness.measure(
      [&] { return a.matmul(b); },
      [&](const Tensor& out) {
        // One rounding of a float32 sum into bfloat16 (8 bits): 2^-8 relative, and a little
        // for the float32 accumulation.
        return compare(
            out.to_vector<float>(),
            [&](size_t i) { return round_to_bfloat16(static_cast<float>(reference[i])); }, 8e-3, 0);
      },
      harness.repeat(), std::nullopt);
  record(result, measured);
  if (measured.timing.runs > 0) result.figure = 2.0 * n * n * n / measured.timing.figure_seconds();
  return result;
}

// The fixed cost of one realize: a tiny graph whose kernel is already compiled.
Result bench_overhead(Harness& harness, double target_seconds) {
  const int64_t n = 16;
  Result result("overhead", std::to_string(n) + " f32");
  result.unit = Result::Unit::Seconds;
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i);
  Tensor x = Tensor::from_vector(values, {n}, harness.device());
  auto measured = harness.measure([&] { return (x + 1) * 2; },
                                  [&](const Tensor& out) {
                                    return compare(
                                        out.to_vector<float>(),
                                        [&](size_t i) { return (values[i] + 1.0) * 2.0; }, 0, 0);
                                  },
                                  // Microseconds each: many runs cost little and steady the median.
                                  std::max(harness.repeat() * 100, 200), 1);
  record(result, measured);
  result.limit = target_seconds;
  result.limit_name = "target <";
  if (measured.timing.runs > 0) {
    result.figure = measured.timing.median_seconds;
    if (result.figure >= target_seconds) result.note = "over the target";
  }
  return result;
}

// Ten chained kernels on 16 elements, replayed: what a replay costs beyond the kernels' own time
// (tiny here), set beside the same step built and realized warm.
Result bench_replay(Harness& harness, double target_seconds) {
  constexpr int kKernels = 10;
  const int64_t n = 16;
  Result result("replay", std::to_string(kKernels) + "x" + std::to_string(n) + " f32");
  result.unit = Result::Unit::Seconds;
  result.limit = target_seconds;
  result.limit_name = "target <";
  auto step_function = [&](const std::vector<Tensor>& in) {
    Tensor value = in[0];
    for (int kernel = 0; kernel < kKernels; ++kernel) value = (value * 1.5f + 1).contiguous();
    return std::vector<Tensor>{value};
  };
  const Tensor x = harness.realized_rand({n}, 11);
  CapturedStep step(step_function);
  step({x});
  step({x});
  const std::vector<float> input = x.to_vector<float>();
  result.problem = compare(
      step({x})[0].to_vector<float>(),
      [&](size_t i) {
        double value = input[i];
        for (int kernel = 0; kernel < kKernels; ++kernel) value = value * 1.5 + 1;
        return value;
      },
      4, 0);
  if (result.problem.empty() && step.kernels() != kKernels)
    result.problem = "the capture holds " + std::to_string(step.kernels()) + " kernels, expected " +
                     std::to_string(kKernels);
  if (!result.problem.empty()) return result;
  const int repeat = std::max(harness.repeat() * 100, 200);
  const Timing replay = time_median(
      [&] {
        step({x});
        harness.context().device().synchronize();
      },
      repeat, harness.sizes().budget_seconds);
  const Timing realize = time_median(
      [&] {
        step_function({x})[0].realize();
        harness.context().device().synchronize();
      },
      repeat, harness.sizes().budget_seconds);
  result.timing = replay;
  result.kernels = kKernels;
  result.figure = replay.median_seconds;
  char text[160];
  std::snprintf(text, sizeof(text), "%.2f us per kernel; the step realized warm: %.1f us",
                replay.median_seconds / kKernels * 1e6, realize.median_seconds * 1e6);
  result.note = text;
  if (result.figure >= target_seconds) result.note += "; over the target";
  return result;
}

}  // namespace kiln::tools::bench
