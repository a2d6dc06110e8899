// The conv2d workload of `kiln bench`: a ResNet-style 3x3 convolution, beside the best GEMM at
// hand on the same im2col product (what a BLAS-backed framework runs for it).

#include <kiln/conv.h>

#include <random>

#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {
namespace {

constexpr int64_t kChannels = 64, kSide = 56, kKernel = 3;

}  // namespace

Result bench_conv2d(Harness& harness, const Blas* blas, const DeviceLimits& limits) {
  const int64_t batch = harness.sizes().conv_batch;
  Result result("conv2d", "3x3 " + std::to_string(kChannels) + "->" + std::to_string(kChannels) +
                              " " + std::to_string(kSide) + "^2 b" + std::to_string(batch) +
                              " f32");
  result.unit = Result::Unit::FlopsPerSecond;
  Tensor x = harness.realized_rand({batch, kChannels, kSide, kSide}, 21);
  Tensor w = harness.realized_rand({kChannels, kChannels, kKernel, kKernel}, 22);
  const std::vector<float> host_x = x.to_vector<float>(), host_w = w.to_vector<float>();
  const int64_t taps = kChannels * kKernel * kKernel, positions = batch * kSide * kSide;
  const double flops = 2.0 * static_cast<double>(kChannels * taps * positions);

  // Output element (n, co, y, x) in double, with padding 1.
  auto reference = [&](int64_t n, int64_t co, int64_t row, int64_t column) {
    double total = 0;
    for (int64_t ci = 0; ci < kChannels; ++ci)
      for (int64_t kh = 0; kh < kKernel; ++kh)
        for (int64_t kw = 0; kw < kKernel; ++kw) {
          const int64_t y = row + kh - 1, x_at = column + kw - 1;
          if (y < 0 || y >= kSide || x_at < 0 || x_at >= kSide) continue;
          total += static_cast<double>(host_x[((n * kChannels + ci) * kSide + y) * kSide + x_at]) *
                   host_w[((co * kChannels + ci) * kKernel + kh) * kKernel + kw];
        }
    return total;
  };
  // A sample of output positions (every edge case of the padding among them) checked exactly.
  std::vector<int64_t> sample;
  std::mt19937_64 generator(23);
  const int64_t outputs = batch * kChannels * kSide * kSide;
  for (int64_t at : {int64_t{0}, kSide - 1, kSide * kSide - 1, outputs - 1}) sample.push_back(at);
  for (int draw = 0; draw < 508; ++draw)
    sample.push_back(static_cast<int64_t>(generator() % static_cast<uint64_t>(outputs)));
  auto check = [&](const Tensor& out) {
    const std::vector<float> got = out.to_vector<float>();
    std::vector<float> picked;
    std::vector<double> wanted;
    for (int64_t at : sample) {
      picked.push_back(got[static_cast<size_t>(at)]);
      const int64_t column = at % kSide, row = (at / kSide) % kSide;
      const int64_t co = (at / (kSide * kSide)) % kChannels, n = at / (kSide * kSide * kChannels);
      wanted.push_back(reference(n, co, row, column));
    }
    return compare(
        picked, [&](size_t index) { return wanted[index]; }, 1e-4, 1e-4);
  };

  const bool gpu = harness.context().device().properties().kind == DeviceKind::GPU;
  if (limits.gemm_float32_flops > 0) {
    result.limit = limits.gemm_float32_flops;
    result.limit_name = limits.gemm_library + " SGEMM";
  } else if (gpu) {
    result.limit_name = "no GPU BLAS";
  } else if (blas) {
    // im2col: (Cin k k) x (N H W) columns, then W (Cout x Cin k k) times them in one SGEMM.
    std::vector<float> columns(static_cast<size_t>(taps * positions), 0.0f);
    for (int64_t ci = 0; ci < kChannels; ++ci)
      for (int64_t kh = 0; kh < kKernel; ++kh)
        for (int64_t kw = 0; kw < kKernel; ++kw) {
          const int64_t tap = (ci * kKernel + kh) * kKernel + kw;
          for (int64_t n = 0; n < batch; ++n)
            for (int64_t row = 0; row < kSide; ++row)
              for (int64_t column = 0; column < kSide; ++column) {
                const int64_t y = row + kh - 1, x_at = column + kw - 1;
                if (y < 0 || y >= kSide || x_at < 0 || x_at >= kSide) continue;
                columns[static_cast<size_t>(tap * positions + (n * kSide + row) * kSide + column)] =
                    host_x[static_cast<size_t>(((n * kChannels + ci) * kSide + y) * kSide + x_at)];
              }
        }
    std::vector<float> product(static_cast<size_t>(kChannels * positions));
    auto run_blas = [&] {
      blas->sgemm(static_cast<int>(kChannels), static_cast<int>(positions), static_cast<int>(taps),
                  host_w.data(), columns.data(), product.data());
    };
    run_blas();
    result.limit =
        flops /
        time_median(run_blas, harness.repeat(), harness.sizes().budget_seconds).median_seconds;
    result.limit_name = "BLAS im2col";
  } else {
    result.limit_name = "no BLAS found";
  }

  auto measured = harness.measure([&] { return nn::conv2d(x, w, {}, {.padding = 1}); }, check,
                                  harness.repeat(), std::nullopt);
  record(result, measured);
  if (measured.timing.runs > 0) result.figure = flops / measured.timing.figure_seconds();
  return result;
}

}  // namespace kiln::tools::bench
