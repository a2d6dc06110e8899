// The workloads of `kiln bench` over values that change between realizes: Variable sizes and
// offsets (include/kiln/variable.h) and scalars held in buffers (Tensor::scalar). Kernels compiled
// once for every value must run about as fast as kernels compiled for one value.

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

namespace {

// One SGD step of a 784-64-10 MLP (relu, softmax cross-entropy), backward written with kiln ops.
struct Mlp {
  Tensor w1, b1, w2, b2;
};

struct StepResult {
  Mlp next;
  Tensor loss;
};

StepResult mlp_step(const Mlp& model, const Tensor& batch, const Tensor& onehot, const Tensor& rate,
                    int64_t batch_size) {
  const Tensor hidden_in = batch.matmul(model.w1) + model.b1;
  const Tensor hidden = hidden_in.relu();
  const Tensor logits = hidden.matmul(model.w2) + model.b2;
  const Tensor loss = -(onehot * logits.log_softmax(-1)).sum(1).mean();
  const Tensor dlogits = (logits.softmax(-1) - onehot) * (1.0 / static_cast<double>(batch_size));
  const Tensor dhidden =
      dlogits.matmul(model.w2.transpose()) * (hidden_in > 0.0).cast(dtypes::float32);
  Mlp next{model.w1 - batch.transpose().matmul(dhidden) * rate, model.b1 - dhidden.sum(0) * rate,
           model.w2 - hidden.transpose().matmul(dlogits) * rate, model.b2 - dlogits.sum(0) * rate};
  realize({next.w1, next.b1, next.w2, next.b2, loss});
  return {next, loss};
}

}  // namespace

Result bench_train_sizes(Harness& harness) {
  constexpr int64_t kRows = 1024, kInputs = 784, kHidden = 64, kClasses = 10, kBatch = 32;
  constexpr int kSteps = 12;
  Result result("train n", "MLP 784-64-10 b32 SGD");
  result.unit = Result::Unit::Seconds;
  const std::string& device = harness.device();
  const std::vector<float> data = harness.realized_rand({kRows, kInputs}, 15).to_vector<float>();
  std::vector<float> onehot(kRows * kClasses, 0.0f);
  for (int64_t row = 0; row < kRows; ++row) onehot[row * kClasses + (row * 7 + 3) % kClasses] = 1;
  // Small centred weights, so that the first loss is near log(10).
  auto weights = [&](int64_t rows, int64_t columns, uint64_t seed) {
    std::vector<float> values = harness.realized_rand({rows, columns}, seed).to_vector<float>();
    for (float& value : values) value = (value - 0.5f) * 0.1f;
    return values;
  };
  const std::vector<float> w1 = weights(kInputs, kHidden, 16), w2 = weights(kHidden, kClasses, 17);
  const Tensor inputs = Tensor::from_vector(data, {kRows, kInputs}, device);
  const Tensor labels = Tensor::from_vector(onehot, {kRows, kClasses}, device);
  auto fresh_model = [&] {
    return Mlp{Tensor::from_vector(w1, {kInputs, kHidden}, device),
               Tensor::from_vector(std::vector<float>(kHidden, 0.0f), {kHidden}, device),
               Tensor::from_vector(w2, {kHidden, kClasses}, device),
               Tensor::from_vector(std::vector<float>(kClasses, 0.0f), {kClasses}, device)};
  };

  // The first step's loss against the host's, in double.
  double expected_loss = 0;
  for (int64_t row = 0; row < kBatch; ++row) {
    std::vector<double> hidden(kHidden, 0.0), logits(kClasses, 0.0);
    for (int64_t unit = 0; unit < kHidden; ++unit) {
      for (int64_t in = 0; in < kInputs; ++in)
        hidden[unit] += static_cast<double>(data[row * kInputs + in]) * w1[in * kHidden + unit];
      hidden[unit] = std::max(hidden[unit], 0.0);
    }
    for (int64_t out = 0; out < kClasses; ++out) {
      for (int64_t unit = 0; unit < kHidden; ++unit)
        logits[out] += hidden[unit] * w2[unit * kClasses + out];
    }
    const double largest = *std::max_element(logits.begin(), logits.end());
    double total = 0;
    for (double logit : logits) total += std::exp(logit - largest);
    const int64_t label = (row * 7 + 3) % kClasses;
    expected_loss -= (logits[label] - largest - std::log(total)) / kBatch;
  }

  // Training: the batch slides (a Variable offset) and the rate decays (Tensor::scalar).
  const Variable start("start", 0, kRows - kBatch);
  KernelStats& stats = harness.context().stats();
  auto built = [&] { return stats.compiles.load() + stats.disk_hits.load(); };
  auto sliding_step = [&](const Mlp& model, int step) {
    const Dim at = start.bind((step * 40) % (kRows - kBatch));
    return mlp_step(model, inputs.shrink({{at, at + Dim(kBatch)}, {Dim(0), Dim(kInputs)}}),
                    labels.shrink({{at, at + Dim(kBatch)}, {Dim(0), Dim(kClasses)}}),
                    Tensor::scalar(0.5 / (1.0 + step), dtypes::float32, device), kBatch);
  };
  Mlp model = fresh_model();
  int64_t after_first = 0;
  for (int step = 0; step < kSteps; ++step) {
    StepResult stepped = sliding_step(model, step);
    if (step == 0) {
      after_first = built();
      const double loss = stepped.loss.item<float>();
      if (!(std::fabs(loss - expected_loss) <= 1e-4 * std::fabs(expected_loss))) {
        result.problem = "the first loss is " + std::to_string(loss) + ", expected " +
                         std::to_string(expected_loss);
        return result;
      }
    }
    model = stepped.next;
  }
  const int64_t later = built() - after_first;
  if (later != 0) {
    result.problem = "the steps after the first built " + std::to_string(later) + " kernels";
    return result;
  }
  int step = kSteps;
  result.timing = time_median(
      [&] {
        model = sliding_step(model, step++).next;
        harness.context().device().synchronize();
      },
      harness.repeat(), harness.sizes().budget_seconds);
  result.figure = result.timing.median_seconds;
  // The limit: the same step at one offset and one rate, numbers compiled into its kernels.
  Mlp fixed_model = fresh_model();
  const Tensor fixed_batch = inputs.shrink({{0, kBatch}, {0, kInputs}});
  const Tensor fixed_labels = labels.shrink({{0, kBatch}, {0, kClasses}});
  const Tensor fixed_rate = Tensor::full({}, 0.01, dtypes::float32, device);
  auto fixed_step = [&] {
    fixed_model = mlp_step(fixed_model, fixed_batch, fixed_labels, fixed_rate, kBatch).next;
    harness.context().device().synchronize();
  };
  fixed_step();  // compiles
  result.limit =
      time_median(fixed_step, harness.repeat(), harness.sizes().budget_seconds).median_seconds;
  result.limit_name = "fixed step";
  result.note = "0 kernels built after the first of " + std::to_string(kSteps) +
                " steps with a moving batch and a changing rate";
  return result;
}

}  // namespace kiln::tools::bench
