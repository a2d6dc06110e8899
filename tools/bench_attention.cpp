// The attention workload of `kiln bench`: causal scaled_dot_product_attention at a GPT-2-small
// shape (8 heads of 64, batch 4). Where the device has workgroups it is one kernel whose scores
// never reach memory, so the least it can move is q, k, v and the output once: its figure is
// that traffic per second, beside the copy bandwidth; the note gives its arithmetic rate.

#include <kiln/nn.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "tools/bench.h"
#include "tools/bench_check.h"

namespace kiln::tools::bench {
namespace {

constexpr int64_t kBatch = 4, kHeads = 8, kWidth = 64;

}  // namespace

Result bench_attention(Harness& harness, const CopyLimit& copy) {
  const int64_t length = harness.sizes().attention;
  Result result("attention", "causal b" + std::to_string(kBatch) + " h" + std::to_string(kHeads) +
                                 " s" + std::to_string(length) + " d" + std::to_string(kWidth) +
                                 " f32");
  const Shape shape = {kBatch, kHeads, length, kWidth};
  const Tensor q = harness.realized_rand(shape, 41), k = harness.realized_rand(shape, 42);
  const Tensor v = harness.realized_rand(shape, 43);
  const std::vector<float> host_q = q.to_vector<float>(), host_k = k.to_vector<float>();
  const std::vector<float> host_v = v.to_vector<float>();
  const double scale = 1 / std::sqrt(static_cast<double>(kWidth));
  // A sample of query rows (the first and last of the sequence among them) checked in double.
  std::vector<int64_t> rows = {0, length - 1, kBatch * kHeads * length - 1};
  for (int64_t row = 1; row < kBatch * kHeads * length; row += 997) rows.push_back(row);
  auto check = [&](const Tensor& out) {
    const std::vector<float> got = out.to_vector<float>();
    std::vector<float> picked;
    std::vector<double> wanted;
    for (int64_t row : rows) {
      const int64_t position = row % length, head_start = (row - position) * kWidth;
      std::vector<double> weights(static_cast<size_t>(position + 1));
      double peak = -INFINITY, total = 0;
      for (int64_t j = 0; j <= position; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < kWidth; ++e)
          dot +=
              static_cast<double>(host_q[row * kWidth + e]) * host_k[head_start + j * kWidth + e];
        weights[j] = dot * scale;
        peak = std::max(peak, weights[j]);
      }
      for (double& weight : weights) total += (weight = std::exp(weight - peak));
      for (int64_t e = 0; e < kWidth; ++e) {
        double value = 0;
        for (int64_t j = 0; j <= position; ++j)
          value += weights[j] / total * host_v[head_start + j * kWidth + e];
        picked.push_back(got[row * kWidth + e]);
        wanted.push_back(value);
      }
    }
    return compare(
        picked, [&](size_t index) { return wanted[index]; }, 1e-4, 1e-5);
  };
  auto measured =
      harness.measure([&] { return nn::scaled_dot_product_attention(q, k, v, {}, true); }, check,
                      harness.repeat(), std::nullopt);
  const double elements = static_cast<double>(kBatch * kHeads * length * kWidth);
  record_bandwidth(result, measured, 4.0 * 4 * elements, copy);
  if (measured.timing.runs > 0) {
    // q k^T and the weights times v over the half of the scores a causal mask keeps.
    const double flops = 2.0 * 2 * elements * static_cast<double>(length) / 2;
    char note[64];
    std::snprintf(note, sizeof note, "%.1f GFLOP/s",
                  flops / measured.timing.figure_seconds() / 1e9);
    result.note = note;
  }
  return result;
}

}  // namespace kiln::tools::bench
