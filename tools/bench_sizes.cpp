// The workloads of `kiln bench` over Variable sizes (include/kiln/variable.h): kernels compiled
// once for every value of a size must run about as fast as kernels compiled for one value.

#include <kiln/tensor.h>
#include <kiln/variable.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {

Result bench_softmax_sizes(Harness& harness, const CopyLimit& copy) {
  constexpr int64_t kWidth = 1024, kCapacity = 4096, kSizes = 64;
  Result result("softmax n", "64 nx1024 f32");
  const Tensor cache = harness.realized_rand({kCapacity, kWidth}, 12);
  const Variable rows("rows", 1, kCapacity);
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < kSizes; ++at) sizes.push_back(1 + at * (kCapacity - 1) / (kSizes - 1));
  auto softmax_of = [&](int64_t n) {
    return cache.shrink({{Dim(0), rows.bind(n)}, {Dim(0), Dim(kWidth)}}).softmax(-1);
  };
  KernelStats& stats = harness.context().stats();
  auto built = [&] { return stats.compiles.load() + stats.disk_hits.load(); };
  // One pass, checked at three sizes: what the first size built, and what the others did.
  const int64_t before = built();
  int64_t after_first = 0;
  const std::vector<float> host = cache.to_vector<float>();
  for (int64_t n : sizes) {
    const Tensor out = softmax_of(n);
    out.realize();
    if (n == sizes.front()) after_first = built();
    if (n != 1 && n != kCapacity && n != sizes[kSizes / 2]) continue;
    std::vector<double> expected(static_cast<size_t>(n * kWidth));
    for (int64_t i = 0; i < n; ++i) {
      const float* in = host.data() + i * kWidth;
      double* row = expected.data() + i * kWidth;
      const double largest = *std::max_element(in, in + kWidth);
      double total = 0;
      for (int64_t j = 0; j < kWidth; ++j) total += row[j] = std::exp(in[j] - largest);
      for (int64_t j = 0; j < kWidth; ++j) row[j] /= total;
    }
    result.problem = compare(
        out.to_vector<float>(), [&](size_t i) { return expected[i]; }, 1e-4, 1e-10);
    if (!result.problem.empty()) {
      result.problem = "n=" + std::to_string(n) + ": " + result.problem;
      return result;
    }
  }
  const int64_t first = after_first - before, others = built() - after_first;
  if (others != 0)
    result.problem = "the sizes after the first built " + std::to_string(others) + " kernels";
  if (!result.problem.empty()) return result;
  double bytes = 0;  // read the rows once, write them once
  for (int64_t n : sizes) bytes += 2.0 * 4 * static_cast<double>(n * kWidth);
  result.timing = time_median(
      [&] {
        for (int64_t n : sizes) softmax_of(n).realize();
        harness.context().device().synchronize();
      },
      std::max(harness.repeat() / 2, 2), harness.sizes().budget_seconds);
  result.unit = Result::Unit::BytesPerSecond;
  result.limit = copy.bytes_per_second;
  result.limit_name = copy.name;
  result.figure = bytes / result.timing.median_seconds;
  result.kernels = first;  // each size launches the kernels the first one built
  result.note = "n = 1..4096; built " + std::to_string(first) + " kernel(s) for n=1, " +
                std::to_string(others) + " for the other " + std::to_string(kSizes - 1) + " sizes";
  return result;
}

Result bench_matmul_sizes(Harness& harness) {
  constexpr int64_t kBatch = 2, kLength = 64, kCapacity = 80, kInner = 128, kOuter = 384;
  Result result("matmul n", "2x(n=64)x128 @384");
  result.unit = Result::Unit::FlopsPerSecond;
  const Tensor cache = harness.realized_rand({kBatch, kCapacity, kInner}, 13);
  const Tensor weight = harness.realized_rand({kInner, kOuter}, 14);
  const std::vector<float> host_cache = cache.to_vector<float>();
  const std::vector<float> host_weight = weight.to_vector<float>();
  std::vector<double> expected(static_cast<size_t>(kBatch * kLength * kOuter), 0.0);
  for (int64_t batch = 0; batch < kBatch; ++batch) {
    for (int64_t row = 0; row < kLength; ++row) {
      double* out = expected.data() + (batch * kLength + row) * kOuter;
      for (int64_t k = 0; k < kInner; ++k) {
        const double scale = host_cache[(batch * kCapacity + row) * kInner + k];
        for (int64_t column = 0; column < kOuter; ++column)
          out[column] += scale * host_weight[k * kOuter + column];
      }
    }
  }
  auto check = [&](const Tensor& out) {
    return compare(
        out.to_vector<float>(), [&](size_t i) { return expected[i]; }, 1e-4, 1e-6);
  };
  const Variable length("n", 1, kCapacity);
  auto matmul_at = [&](const Dim& n) {
    return cache.shrink({{Dim(0), Dim(kBatch)}, {Dim(0), n}, {Dim(0), Dim(kInner)}}).matmul(weight);
  };
  // The same product compiled for n = 64 is this row's limit: what a Variable must not lose.
  const Harness::Measured variable =
      harness.measure([&] { return matmul_at(length.bind(kLength)); }, check, harness.repeat(), 1);
  const Harness::Measured fixed =
      harness.measure([&] { return matmul_at(Dim(kLength)); }, check, harness.repeat(), 1);
  record(result, variable);
  if (!fixed.problem.empty()) result.problem = "with n fixed: " + fixed.problem;
  const double flops = 2.0 * kBatch * kLength * kInner * kOuter;
  if (variable.timing.runs > 0) result.figure = flops / variable.timing.figure_seconds();
  if (fixed.timing.runs > 0) result.limit = flops / fixed.timing.figure_seconds();
  result.limit_name = "n fixed";
  return result;
}

}  // namespace kiln::tools::bench
